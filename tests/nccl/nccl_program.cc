// nccl_program.cc — a program written against NCCL's API and nothing else
// (nccl.h, and the CUDA runtime where there is one), run on libcoll's
// libnccl.so.2: what an unmodified NCCL user does, checked result by result.
//
//   nccl_program procs N    ranks as processes (fork; the id through pipes)
//   nccl_program threads N  ranks as threads, one communicator each
//   nccl_program group N    one thread: the ranks' inits and calls inside
//                           ncclGroupStart/End, then ncclCommInitAll
//   nccl_program abort N    ranks as threads; rank 0 blocks in an
//                           all-reduce its peers never join (host buffers),
//                           another thread aborts its communicator
//   nccl_program splits N [ROUNDS]
//                           ROUNDS (default 60) rounds of N fresh processes
//                           that split in every shape (split_stress.h) and
//                           exit at once (host buffers)
//
// Buffers are device memory (cudaMalloc, a stream per rank) where a CUDA
// device is, else host memory (which libcoll also takes).  Every failure is
// printed with the rank, line, result and ncclGetLastError; the exit status
// is the number of failures (capped), 0 when all passed.  This file has the
// modes; rank_checks.h what each rank checks.
#include <nccl.h>

#include <dlfcn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "program_rank.h"
#include "rank_checks.h"
#include "split_stress.h"

using namespace ncclprog;

namespace {

// Each process asks for a device after the fork: a CUDA runtime set up
// before a fork is not usable in the child.
int runProcs(int n, bool* device) {
  std::vector<int> writeEnds;
  std::vector<pid_t> kids;
  for (int r = 1; r < n; r++) {
    int fds[2];
    if (pipe(fds) != 0) return 100;
    pid_t pid = fork();
    if (pid == 0) {
      close(fds[1]);
      ncclUniqueId id;
      if (read(fds[0], &id, sizeof id) != static_cast<ssize_t>(sizeof id)) _exit(101);
      Rank R{r, n, useDevice()};
      R.select();
      R.makeStream();
      if (initRank(R, id)) runRank(R);
      _exit(std::min(failures.load(), 100));
    }
    close(fds[0]);
    writeEnds.push_back(fds[1]);
    kids.push_back(pid);
  }
  *device = useDevice();
  Rank R{0, n, *device};
  R.select();
  ncclUniqueId id;
  OK(0, nullptr, ncclGetUniqueId(&id));
  for (int fd : writeEnds) {
    if (write(fd, &id, sizeof id) != static_cast<ssize_t>(sizeof id)) report(0, NCCLPROG_HERE_, __LINE__, "write to a child");
    close(fd);
  }
  R.makeStream();
  if (initRank(R, id)) runRank(R);
  int total = failures.load();
  for (pid_t k : kids) {
    int st = 0;
    waitpid(k, &st, 0);
    int code = WIFEXITED(st) ? WEXITSTATUS(st) : 100;
    if (code != 0) std::fprintf(stderr, "child %d exited with %d (its failures)\n", static_cast<int>(k), code);
    total += code;
  }
  return total;
}

int runThreads(int n, bool device) {
  ncclUniqueId id;
  OK(0, nullptr, ncclGetUniqueId(&id));
  std::vector<std::thread> ts;
  for (int r = 0; r < n; r++)
    ts.emplace_back([=] {
      Rank R{r, n, device};
      R.select();
      R.makeStream();
      if (initRank(R, id)) runRank(R);
    });
  for (auto& t : ts) t.join();
  return failures.load();
}

// One thread drives every rank: inits in a group, calls in groups.
int runGroup(int n, bool device) {
  std::vector<Rank> R(n);
  ncclUniqueId id;
  OK(0, nullptr, ncclGetUniqueId(&id));
  OK(0, nullptr, ncclGroupStart());
  for (int r = 0; r < n; r++) {
    R[r] = Rank{r, n, device};
    R[r].select();
    R[r].makeStream();
    OK(r, nullptr, ncclCommInitRank(&R[r].comm, n, id, r));
  }
  // Before ncclGroupEnd the handles exist, their communicators not yet.
  int count = 0;
  EXPECT_RESULT(0, R[0].comm, ncclCommCount(R[0].comm, &count), ncclInvalidUsage);
  OK(0, nullptr, ncclGroupEnd());
  auto allReduceAll = [&](std::vector<ncclComm_t> comms, const char* what) {
    std::vector<Buf<int32_t>*> bufs;
    OK(0, nullptr, ncclGroupStart());
    for (int r = 0; r < n; r++) {
      if (comms[r] == nullptr) {
        bufs.push_back(nullptr);
        continue;
      }
      R[r].select();
      auto* b = new Buf<int32_t>(R[r], 3);
      b->host = {r, 1, 2 * r};
      b->upload();
      bufs.push_back(b);
      OK(r, comms[r], ncclAllReduce(b->mem, b->mem, 3, ncclInt32, ncclSum, comms[r], R[r].stream));
    }
    OK(0, nullptr, ncclGroupEnd());
    int members = 0, sum = 0;
    for (int r = 0; r < n; r++)
      if (comms[r] != nullptr) members++, sum += r;
    for (int r = 0; r < n; r++) {
      if (bufs[r] == nullptr) continue;
      auto& g = bufs[r]->download();
      CHECK(r, g[0] == sum && g[1] == members && g[2] == 2 * sum, what);
      delete bufs[r];
    }
  };
  std::vector<ncclComm_t> comms(n);
  for (int r = 0; r < n; r++) comms[r] = R[r].comm;
  allReduceAll(comms, "grouped all-reduce");
  // A split in a group: odd ranks only.
  std::vector<ncclComm_t> odd(n, nullptr);
  OK(0, nullptr, ncclGroupStart());
  for (int r = 0; r < n; r++) OK(r, comms[r], ncclCommSplit(comms[r], r % 2 ? 1 : NCCL_SPLIT_NOCOLOR, r, &odd[r], nullptr));
  OK(0, nullptr, ncclGroupEnd());
  for (int r = 0; r < n; r++) CHECK(r, (odd[r] != nullptr) == (r % 2 == 1), "split in a group");
  allReduceAll(odd, "all-reduce on the odd ranks' split");
  for (int r = 0; r < n; r++) OK(r, odd[r], ncclCommDestroy(odd[r]));
  for (int r = 0; r < n; r++) OK(r, comms[r], ncclCommDestroy(comms[r]));
  // ncclCommInitAll: rank i on devlist[i].
  std::vector<int> devs(n, 0);
  OK(0, nullptr, ncclCommInitAll(comms.data(), n, devs.data()));
  for (int r = 0; r < n; r++) {
    int d = -1, rank = -1;
    OK(r, comms[r], ncclCommCuDevice(comms[r], &d));
    OK(r, comms[r], ncclCommUserRank(comms[r], &rank));
    CHECK(r, d == 0 && rank == r, "ncclCommInitAll's device and rank");
  }
  allReduceAll(comms, "all-reduce after ncclCommInitAll");
  for (int r = 0; r < n; r++) OK(r, comms[r], ncclCommDestroy(comms[r]));
  return failures.load();
}

// ncclCommAbort from another thread while rank 0 is inside a call that
// cannot finish: the call returns an error, the abort frees the
// communicator once it has, and the peers are unaffected.
int runAbort(int n) {
  ncclUniqueId id;
  OK(0, nullptr, ncclGetUniqueId(&id));
  std::vector<Rank> R(n);
  std::vector<std::thread> inits;
  for (int r = 0; r < n; r++) {
    R[r] = Rank{r, n, false};
    inits.emplace_back([&, r] { initRank(R[r], id); });
  }
  for (auto& t : inits) t.join();
  for (int r = 0; r < n; r++)
    if (R[r].comm == nullptr) return failures.load() + 1;
  std::vector<float> buf(1024, 1.0f);
  std::atomic<bool> returned{false};
  ncclResult_t blocked = ncclSuccess;
  std::thread caller([&] {
    blocked = ncclAllReduce(buf.data(), buf.data(), buf.size(), ncclFloat32, ncclSum, R[0].comm, nullptr);
    returned = true;
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  CHECK(0, !returned.load(), "the all-reduce waits for peers that never call");
  auto t0 = std::chrono::steady_clock::now();
  OK(0, nullptr, ncclCommAbort(R[0].comm));
  double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  caller.join();
  CHECK(0, blocked != ncclSuccess, "the aborted all-reduce failed");
  CHECK(0, took < 10, "the abort took " + std::to_string(took) + " s");
  int count = 0;
  EXPECT_RESULT(0, nullptr, ncclCommCount(R[0].comm, &count), ncclInvalidArgument);  // gone
  for (int r = 1; r < n; r++) {
    OK(r, R[r].comm, ncclCommCount(R[r].comm, &count));
    OK(r, R[r].comm, ncclCommDestroy(R[r].comm));
  }
  return failures.load();
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 3 && !(argc == 4 && std::string(argv[1]) == "splits")) {
    std::fprintf(stderr, "usage: %s procs|threads|group|abort NRANKS, or %s splits NRANKS [ROUNDS]\n", argv[0], argv[0]);
    return 2;
  }
  std::string mode = argv[1];
  int n = std::atoi(argv[2]);
  if (n < 1 || n > 64) return 2;
  // Which libnccl.so.2 the loader picked (NCCL_PROGRAM_EXPECT_LIB: a part
  // of the path it must have, for a binary linked to another NCCL).
  Dl_info where{};
  const char* lib = dladdr(reinterpret_cast<void*>(&ncclGetVersion), &where) != 0 ? where.dli_fname : "?";
  if (const char* want = std::getenv("NCCL_PROGRAM_EXPECT_LIB"); want != nullptr && std::strstr(lib, want) == nullptr) {
    std::fprintf(stderr, "ncclGetVersion comes from %s, not from a path with %s\n", lib, want);
    return 1;
  }
  bool device = false;
  int total = -1;
  if (mode == "procs") {
    total = runProcs(n, &device);  // no CUDA call before its fork
  } else if (mode == "threads") {
    device = useDevice();
    total = runThreads(n, device);
  } else if (mode == "group") {
    device = useDevice();
    total = runGroup(n, device);
  } else if (mode == "abort" && n >= 2) {
    total = runAbort(n);
  } else if (mode == "splits" && n >= 2) {
    const int rounds = argc == 4 ? std::atoi(argv[3]) : 60;
    if (rounds < 1) return 2;
    total = runSplitStress(n, rounds);
  }
  if (total < 0) return 2;
  std::printf("nccl_program %s %d on %s buffers, %s: %s (%d failures)\n", mode.c_str(), n, device ? "device" : "host",
              lib, total == 0 ? "all checks passed" : "FAILED", total);
  return total == 0 ? 0 : 1;
}
