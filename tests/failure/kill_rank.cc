// kill_rank.cc — one rank of the kill trials (driven by kill_trials.py).
//
// Usage: kill_rank VICTIM [SECONDS]
//
// Every rank inits from the launcher's environment, allocates two 64 MiB
// float buffers (16M floats) and loops out-of-place sum all-reduces for up
// to SECONDS (default 30).  The driver SIGKILLs rank VICTIM from outside
// while the others are in the loop; the program itself never dies on
// purpose.  Machine-readable lines, one per line on stdout (flushed):
//
//   PID rank=R pid=P                        at start, before init
//   LOOPING rank=R                          after the first correct all-reduce
//   FAILED rank=R t_ns=T code=N name=NAME msg=TEXT
//                                           when an all-reduce returns an error
//                                           (T: CLOCK_REALTIME when it returned)
//   LATER rank=R code=N ms=X                a second call on the failed comm
//   ASYNC rank=R code=N                     collCommGetAsyncError afterwards
//   DESTROYED rank=R                        collCommDestroy returned
//   NOFAIL rank=R iters=K                   SECONDS passed without an error
//
// Exit status: 0 after DESTROYED; 1 init failed; 2 usage; 3 NOFAIL;
// 4 a wrong all-reduce result.
#include <sys/prctl.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <string>
#include <vector>

#include "coll.h"

namespace {

int64_t realtimeNs() {
  timespec ts{};
  clock_gettime(CLOCK_REALTIME, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}

// One line, no embedded newlines (messages are parsed line by line).
std::string oneLine(const char* s) {
  std::string out = s != nullptr ? s : "";
  for (char& c : out)
    if (c == '\n' || c == '\r') c = ' ';
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: kill_rank VICTIM [SECONDS]\n");
    return 2;
  }
  const int victim = atoi(argv[1]);
  const double seconds = argc > 2 ? atof(argv[2]) : 30.0;
  // Never outlive the driver (it may itself be killed by a test timeout).
  pid_t parent = getppid();
  prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (getppid() != parent) return 1;
  setvbuf(stdout, nullptr, _IOLBF, 0);

  const char* rankEnv = getenv("COLL_RANK");
  printf("PID rank=%s pid=%d\n", rankEnv != nullptr ? rankEnv : "?", static_cast<int>(getpid()));

  collComm_t comm = nullptr;
  if (collCommInitFromEnv(&comm) != collSuccess) {
    fprintf(stderr, "init failed: %s\n", collGetLastError(nullptr));
    return 1;
  }
  int rank = 0, n = 1;
  collCommUserRank(comm, &rank);
  collCommCount(comm, &n);
  if (victim < 0 || victim >= n) {
    fprintf(stderr, "rank %d: victim %d out of range 0..%d\n", rank, victim, n - 1);
    collCommDestroy(comm);
    return 2;
  }

  constexpr size_t kCount = size_t{16} << 20;  // 64 MiB of floats
  std::vector<float> in(kCount, 1.0f), out(kCount, 0.0f);
  const float want = static_cast<float>(n);
  const auto t0 = std::chrono::steady_clock::now();
  long iters = 0;
  for (;;) {
    collResult_t r = collAllReduce(in.data(), out.data(), kCount, collFloat32, collSum, comm, nullptr);
    const int64_t tRet = realtimeNs();
    if (r != collSuccess) {
      printf("FAILED rank=%d t_ns=%lld code=%d name=%s msg=%s\n", rank, static_cast<long long>(tRet),
             static_cast<int>(r), collGetErrorString(r), oneLine(collGetLastError(comm)).c_str());
      // A later call on the failed communicator must fail too, promptly.
      auto l0 = std::chrono::steady_clock::now();
      collResult_t later = collAllReduce(in.data(), out.data(), kCount, collFloat32, collSum, comm, nullptr);
      double laterMs = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - l0).count();
      printf("LATER rank=%d code=%d ms=%.1f msg=%s\n", rank, static_cast<int>(later), laterMs,
             oneLine(collGetLastError(comm)).c_str());
      collResult_t async = collSuccess;
      collCommGetAsyncError(comm, &async);
      printf("ASYNC rank=%d code=%d\n", rank, static_cast<int>(async));
      collCommDestroy(comm);
      printf("DESTROYED rank=%d\n", rank);
      return 0;
    }
    // The first result in full, then a few samples per call (cheap).
    const size_t stride = iters == 0 ? 1 : kCount / 7;
    for (size_t i = 0; i < kCount; i += stride)
      if (out[i] != want) {
        printf("WRONG rank=%d iter=%ld index=%zu got=%g want=%g\n", rank, iters, i, static_cast<double>(out[i]),
               static_cast<double>(want));
        collCommDestroy(comm);
        return 4;
      }
    if (iters++ == 0) printf("LOOPING rank=%d\n", rank);
    if (std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() > seconds) {
      printf("NOFAIL rank=%d iters=%ld\n", rank, iters);
      collCommDestroy(comm);
      return 3;
    }
  }
}
