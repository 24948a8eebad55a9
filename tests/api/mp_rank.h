// mp_rank.h — what every multi-process test program starts with: a
// communicator from the launcher's environment, and this rank's place in it.
#pragma once

#include <chrono>
#include <cstdio>
#include <string>
#include <vector>

#include "coll.h"

struct MpRank {
  collComm_t comm = nullptr;
  int rank = 0;
  int nranks = 1;
};

// False (after printing why) if init failed.
inline bool mpInit(MpRank* r) {
  if (collCommInitFromEnv(&r->comm) != collSuccess) {
    fprintf(stderr, "init failed: %s\n", collGetLastError(nullptr));
    return false;
  }
  collCommUserRank(r->comm, &r->rank);
  collCommCount(r->comm, &r->nranks);
  return true;
}

// An in-place float sum all-reduce of buf that is expected to fail: its
// result, how long it took, and the error message (printed for the log).
struct TimedCall {
  collResult_t result;
  double seconds;
  std::string message;
};

inline TimedCall timedAllReduce(const MpRank& me, std::vector<float>& buf) {
  auto t0 = std::chrono::steady_clock::now();
  collResult_t r = collAllReduce(buf.data(), buf.data(), buf.size(), collFloat32, collSum, me.comm, nullptr);
  double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  TimedCall t{r, s, collGetLastError(me.comm)};
  printf("rank %d: result %d after %.2f s: %s\n", me.rank, r, s, t.message.c_str());
  return t;
}
