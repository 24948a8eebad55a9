// fr_loop.cc — a loop of all-reduces in which one rank stops: it hangs
// (stops calling, alive) or dies (SIGKILL) before call number STOP.  The
// others fail (timeout, dead peer) and their flight recorders dump to
// COLL_FR_DIR by themselves; tests/failure/fr_check.sh then reads the
// dumps with `colltrace analyze`.  The hung rank waits until every survivor
// wrote its dump, then writes its own with collCommDumpRecord (as a SIGUSR2
// would), so the analysis sees it never entered call STOP.
//
// Usage: fr_loop hang|kill VICTIM STOP [COUNT=65536]
#include <glob.h>
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "coll.h"

int main(int argc, char** argv) {
  if (argc < 4) {
    fprintf(stderr, "usage: fr_loop hang|kill VICTIM STOP [COUNT]\n");
    return 2;
  }
  const std::string mode = argv[1];
  const int victim = atoi(argv[2]);
  const int stop = atoi(argv[3]);
  const size_t count = argc > 4 ? strtoull(argv[4], nullptr, 10) : 65536;
  collComm_t comm = nullptr;
  if (collCommInitFromEnv(&comm) != collSuccess) {
    fprintf(stderr, "init failed: %s\n", collGetLastError(nullptr));
    return 1;
  }
  int rank = 0, n = 1;
  collCommUserRank(comm, &rank);
  collCommCount(comm, &n);
  // collrun stops the other ranks (SIGTERM, then SIGKILL 3 s later) when
  // one dies; here the survivors must find the death themselves and dump.
  if (mode == "kill") signal(SIGTERM, SIG_IGN);
  std::vector<float> buf(count, 1.0f);
  for (int i = 0;; ++i) {
    if (rank == victim && i == stop) {
      if (mode == "kill") raise(SIGKILL);
      // Hung: alive and silent while the others time out and dump.
      const char* dir = getenv("COLL_FR_DIR");
      for (int waited = 0; waited < 200; ++waited) {
        int dumps = 0;
        for (int r = 0; r < n; ++r) {
          const std::string pattern = std::string(dir ? dir : ".") + "/coll_fr.*.r" + std::to_string(r) + ".jsonl";
          glob_t g{};
          if (r != rank && glob(pattern.c_str(), 0, nullptr, &g) == 0) ++dumps;
          globfree(&g);
        }
        if (dumps == n - 1) break;
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
      }
      if (collCommDumpRecord(comm, nullptr) != collSuccess) {
        fprintf(stderr, "rank %d: collCommDumpRecord failed: %s\n", rank, collGetLastError(comm));
        return 1;
      }
      printf("rank %d: hung before call %d, dumped\n", rank, stop);
      collCommAbort(comm);
      return 0;
    }
    collResult_t r = collAllReduce(buf.data(), buf.data(), count, collFloat32, collSum, comm, nullptr);
    if (r != collSuccess) {
      printf("rank %d: call %d failed: %s\n", rank, i, collGetLastError(comm));
      collCommDestroy(comm);
      return 0;  // the expected end: the test reads the dumps
    }
    if (i > stop + 1000) {
      fprintf(stderr, "rank %d: no failure after %d calls\n", rank, i);
      return 1;
    }
  }
}
