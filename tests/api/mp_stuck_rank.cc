// mp_stuck_rank.cc — the last rank never calls the collective.  Every other
// rank must return an error within COLL_TIMEOUT plus a margin, and the
// stuck rank must be nameable from the survivors' messages.
// Exit 0 when that held on this rank, 1 otherwise.
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "coll.h"

int main() {
  collComm_t comm;
  if (collCommInitFromEnv(&comm) != collSuccess) {
    fprintf(stderr, "init failed: %s\n", collGetLastError(nullptr));
    return 1;
  }
  int rank, n;
  collCommUserRank(comm, &rank);
  collCommCount(comm, &n);
  if (rank == n - 1) {
    // Stuck: alive, never calls, until the others are surely done.
    sleep(6);
    collCommDestroy(comm);
    return 0;
  }
  std::vector<float> buf(1 << 16, 1.0f);
  auto t0 = std::chrono::steady_clock::now();
  collResult_t r = collAllReduce(buf.data(), buf.data(), buf.size(), collFloat32, collSum, comm, nullptr);
  double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::string msg = collGetLastError(comm);
  printf("rank %d: result %d after %.2f s: %s\n", rank, r, s, msg.c_str());
  collCommDestroy(comm);
  std::string stuck = "rank " + std::to_string(n - 1);
  bool ok = (r == collTimeout || r == collRemoteError) && s < 4.0 && msg.find(stuck) != std::string::npos;
  return ok ? 0 : 1;
}
