// fr_dump_paths.cc — the flight recorder's dumps that no failure makes:
// collCommDumpRecord to a named file and to COLL_FR_DIR's default one, and
// SIGUSR2 (the library's watcher thread dumps every live communicator).
// Each file is checked: its header (reason, rank, nranks, recorded calls)
// and one line per call, the last one completed.  With COLL_FR_ENTRIES=0
// (argument "off") collCommDumpRecord must refuse.
//
// Usage (under collrun): fr_dump_paths DIR [off]
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "coll.h"

namespace {

int failures = 0;

void check(bool ok, int rank, const std::string& what) {
  if (ok) return;
  fprintf(stderr, "rank %d: FAILED: %s\n", rank, what.c_str());
  ++failures;
}

std::vector<std::string> readLines(const std::string& path) {
  std::ifstream f(path);
  std::vector<std::string> out;
  for (std::string l; std::getline(f, l);) out.push_back(l);
  return out;
}

void checkDump(const std::string& path, int rank, int n, const char* reason, int calls) {
  const auto l = readLines(path);
  check(static_cast<int>(l.size()) == 1 + calls, rank, path + ": " + std::to_string(l.size()) + " lines");
  if (l.empty()) return;
  check(l[0].find(std::string("\"reason\":\"") + reason + "\"") != std::string::npos, rank, path + ": reason");
  check(l[0].find("\"rank\":" + std::to_string(rank) + ",\"nranks\":" + std::to_string(n)) != std::string::npos, rank,
        path + ": rank");
  check(l[0].find("\"recorded\":" + std::to_string(calls) + "}") != std::string::npos, rank, path + ": recorded");
  if (l.size() > 1)
    check(l.back().find("\"state\":\"completed\"") != std::string::npos, rank, path + ": last call completed");
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: fr_dump_paths DIR [off]\n");
    return 2;
  }
  const std::string dir = argv[1];
  const bool off = argc > 2 && std::strcmp(argv[2], "off") == 0;
  collComm_t comm = nullptr;
  if (collCommInitFromEnv(&comm) != collSuccess) {
    fprintf(stderr, "init failed: %s\n", collGetLastError(nullptr));
    return 1;
  }
  int rank = 0, n = 1;
  collCommUserRank(comm, &rank);
  collCommCount(comm, &n);
  std::vector<float> buf(1000, 1.0f);
  for (int i = 0; i < 5; ++i)
    check(collAllReduce(buf.data(), buf.data(), buf.size(), collFloat32, collSum, comm, nullptr) == collSuccess, rank,
          "allreduce");
  const std::string named = dir + "/named.r" + std::to_string(rank) + ".jsonl";
  if (off) {
    check(collCommDumpRecord(comm, named.c_str()) == collInvalidUsage, rank, "dump refused when off");
  } else {
    check(collCommDumpRecord(comm, named.c_str()) == collSuccess, rank, "dump to a named file");
    checkDump(named, rank, n, "api", 5);
    // The default name in COLL_FR_DIR: the file whose name ends in .r<rank>.jsonl.
    check(collCommDumpRecord(comm, nullptr) == collSuccess, rank, "dump to COLL_FR_DIR");
    // SIGUSR2: the watcher thread rewrites the default file; wait for its reason.
    std::string defaultFile;
    {
      FILE* ls = popen(("ls " + dir + "/coll_fr.*.r" + std::to_string(rank) + ".jsonl").c_str(), "r");
      char line[512] = {};
      if (ls && fgets(line, sizeof(line), ls)) defaultFile = std::string(line, strcspn(line, "\n"));
      if (ls) pclose(ls);
    }
    check(!defaultFile.empty(), rank, "a default file in COLL_FR_DIR");
    checkDump(defaultFile, rank, n, "api", 5);
    raise(SIGUSR2);
    bool seen = false;
    for (int i = 0; i < 100 && !seen; ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
      const auto l = readLines(defaultFile);
      seen = !l.empty() && l[0].find("\"reason\":\"signal\"") != std::string::npos;
    }
    check(seen, rank, "SIGUSR2 rewrote the default file");
    if (seen) checkDump(defaultFile, rank, n, "signal", 5);
  }
  check(collCommDestroy(comm) == collSuccess, rank, "destroy");
  if (failures == 0) printf("rank %d: PASS\n", rank);
  return failures == 0 ? 0 : 1;
}
