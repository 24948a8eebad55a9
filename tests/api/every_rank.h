// every_rank.h — one call on every rank of a communicator set, each rank's
// result and last error, and how long they all took (errors_test.cc,
// mismatch_test.cc).
#pragma once

#include <chrono>
#include <string>
#include <vector>

#include "coll.h"
#include "rank_threads.h"

namespace colltest {

inline double secondsSince(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}

struct Outcome {
  std::vector<collResult_t> res;
  std::vector<std::string> msg;
  double seconds = 0;
};

// call(rank, comm) returns the rank's result.
template <class Call>
Outcome callOnEveryRank(const std::vector<collComm_t>& comms, Call call) {
  Outcome o;
  o.res.assign(comms.size(), collSuccess);
  o.msg.assign(comms.size(), "");
  const auto t0 = std::chrono::steady_clock::now();
  runRanks(comms, [&](int rank, collComm_t comm) {
    o.res[rank] = call(rank, comm);
    o.msg[rank] = collGetLastError(comm);
  });
  o.seconds = secondsSince(t0);
  return o;
}

}  // namespace colltest
