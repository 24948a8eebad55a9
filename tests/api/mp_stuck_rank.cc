// mp_stuck_rank.cc — the last rank never calls the collective.  Every other
// rank must return an error within COLL_TIMEOUT plus a margin; together
// their messages must name the stuck rank (the rank that waited on it
// directly says so; the others report whom they waited on).
//
// Survivors write their result to DIR/<rank>.txt and exit 0 if they failed
// promptly.  The stuck rank, after the others are done, reads those files
// and exits 0 only if every survivor reported and one names it.
// Usage: mp_stuck_rank DIR
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "coll.h"
#include "mp_rank.h"

int main(int argc, char** argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: mp_stuck_rank DIR\n");
    return 2;
  }
  std::string dir = argv[1];
  MpRank me;
  if (!mpInit(&me)) return 1;
  collComm_t comm = me.comm;
  const int rank = me.rank, n = me.nranks;
  const std::string stuck = "rank " + std::to_string(n - 1);
  if (rank == n - 1) {
    sleep(5);  // alive, never calls
    collCommDestroy(comm);
    int reported = 0;
    bool named = false;
    for (int r = 0; r < n - 1; ++r) {
      std::ifstream f(dir + "/" + std::to_string(r) + ".txt");
      std::stringstream ss;
      ss << f.rdbuf();
      if (!ss.str().empty()) ++reported;
      named |= ss.str().find("waiting for " + stuck) != std::string::npos;
    }
    printf("%d of %d survivors reported; stuck rank named: %s\n", reported, n - 1, named ? "yes" : "no");
    return reported == n - 1 && named ? 0 : 1;
  }
  std::vector<float> buf(1 << 16, 1.0f);
  const TimedCall t = timedAllReduce(me, buf);
  collCommDestroy(comm);
  bool ok = (t.result == collTimeout || t.result == collRemoteError) && t.seconds < 4.0;
  if (ok) std::ofstream(dir + "/" + std::to_string(rank) + ".txt") << t.message << "\n";
  return ok ? 0 : 1;
}
