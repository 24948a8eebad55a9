// nccl_fr_loop.cc — the flight recorder through the NCCL ABI: N processes
// (forked; the unique id through pipes) loop over ncclAllReduce on host
// buffers; rank VICTIM stops calling before call STOP.  The others time out
// (COLL_TIMEOUT) and their communicators dump to COLL_FR_DIR by
// themselves; the hung rank then raises SIGUSR2, whose dump the library's
// watcher thread writes, so every rank has a file.  tests/failure's
// fr_check.sh reads them with `colltrace analyze`.
//
// Usage: nccl_fr_loop N VICTIM STOP
#include <glob.h>
#include <nccl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

namespace {

bool fileFor(int rank) {
  const char* dir = getenv("COLL_FR_DIR");
  const std::string pattern = std::string(dir ? dir : ".") + "/coll_fr.*.r" + std::to_string(rank) + ".jsonl";
  glob_t g{};
  const bool found = glob(pattern.c_str(), 0, nullptr, &g) == 0;
  globfree(&g);
  return found;
}

int runRank(int rank, int n, int victim, int stop, const ncclUniqueId& id) {
  ncclComm_t comm = nullptr;
  if (ncclCommInitRank(&comm, n, id, rank) != ncclSuccess) {
    fprintf(stderr, "rank %d: init failed\n", rank);
    return 1;
  }
  std::vector<float> buf(65536, 1.0f);
  for (int i = 0;; ++i) {
    if (rank == victim && i == stop) {
      for (int waited = 0; waited < 200; ++waited) {
        int have = 0;
        for (int r = 0; r < n; ++r) have += r != rank && fileFor(r) ? 1 : 0;
        if (have == n - 1) break;
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
      }
      raise(SIGUSR2);
      for (int waited = 0; waited < 100 && !fileFor(rank); ++waited)
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
      printf("rank %d: hung before call %d, %s\n", rank, stop, fileFor(rank) ? "dumped on SIGUSR2" : "NO DUMP");
      ncclCommAbort(comm);
      return fileFor(rank) ? 0 : 1;
    }
    const ncclResult_t r = ncclAllReduce(buf.data(), buf.data(), buf.size(), ncclFloat32, ncclSum, comm, nullptr);
    if (r != ncclSuccess) {
      printf("rank %d: call %d failed: %s\n", rank, i, ncclGetLastError(comm));
      ncclCommAbort(comm);
      return 0;
    }
    if (i > stop + 1000) return 1;
  }
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 4) {
    fprintf(stderr, "usage: nccl_fr_loop N VICTIM STOP\n");
    return 2;
  }
  const int n = atoi(argv[1]), victim = atoi(argv[2]), stop = atoi(argv[3]);
  setvbuf(stdout, nullptr, _IOLBF, 0);
  std::vector<int> writeEnds;
  std::vector<pid_t> kids;
  for (int r = 1; r < n; ++r) {
    int fds[2];
    if (pipe(fds) != 0) return 100;
    const pid_t pid = fork();
    if (pid == 0) {
      close(fds[1]);
      ncclUniqueId id;
      if (read(fds[0], &id, sizeof id) != static_cast<ssize_t>(sizeof id)) _exit(101);
      _exit(runRank(r, n, victim, stop, id));
    }
    close(fds[0]);
    writeEnds.push_back(fds[1]);
    kids.push_back(pid);
  }
  ncclUniqueId id;
  if (ncclGetUniqueId(&id) != ncclSuccess) return 102;
  for (int fd : writeEnds) {
    if (write(fd, &id, sizeof id) != static_cast<ssize_t>(sizeof id)) return 103;
    close(fd);
  }
  int rc = runRank(0, n, victim, stop, id);
  for (pid_t k : kids) {
    int status = 0;
    waitpid(k, &status, 0);
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) rc = 1;
  }
  return rc;
}
