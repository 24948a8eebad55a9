// mp_dead_rank.cc — the last rank's process vanishes right after init
// (_exit without a word).  Survivors, with a long COLL_TIMEOUT, must fail
// within 2 s with an error naming the dead rank: found by its pid, not by
// the deadline.  And ranks that finish a collective and exit while peers
// are still finishing theirs must not look like deaths (first phase).
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <string>
#include <vector>

#include "coll.h"
#include "mp_rank.h"

int main() {
  MpRank me;
  if (!mpInit(&me)) return 1;
  collComm_t comm = me.comm;
  const int rank = me.rank, n = me.nranks;
  // Phase 1: a normal collective; the last rank leaves right after it.
  std::vector<float> buf(1 << 18, 1.0f);
  if (collAllReduce(buf.data(), buf.data(), buf.size(), collFloat32, collSum, comm, nullptr) != collSuccess) {
    fprintf(stderr, "rank %d: phase 1 failed: %s\n", rank, collGetLastError(comm));
    return 1;
  }
  if (rank == n - 1) _exit(0);
  // Phase 2: the others call again; the last rank is gone.
  const TimedCall t = timedAllReduce(me, buf);
  collCommDestroy(comm);
  bool ok = t.result == collRemoteError && t.seconds < 2.0 && t.message.find("rank " + std::to_string(n - 1)) != std::string::npos;
  return ok ? 0 : 1;
}
