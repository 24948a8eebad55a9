// shm_floor — the least a shared-memory all-reduce of 8 B can cost on this
// machine, measured: N forked processes, each op every process publishes a
// value and an op number in its own cache line (release), waits until all N
// published this op (spin `spin` times, then sched_yield), and sums the
// values.  No FIFOs, headers, checks or API: the floor that libcoll's 8 B
// all-reduce (all_reduce_perf -b 8 -e 8) is compared with in
// docs/PERFORMANCE.md.  Lines alternate by the op's parity; a process
// reuses one only after every peer published the op in between.
//
//   build/perf/shm_floor [N=4] [iters=200000] [spin=0]
#include <sched.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>

#if defined(__x86_64__)
#include <immintrin.h>
#define SHM_FLOOR_RELAX() _mm_pause()
#else
#define SHM_FLOOR_RELAX() asm volatile("" ::: "memory")
#endif

namespace {

struct alignas(64) Line {
  std::atomic<long> op;
  double value;
};

void rankLoop(Line* lines, int n, int r, long iters, int spin) {
  const long warmup = 1000;
  double sum = 0;
  auto t0 = std::chrono::steady_clock::now();
  for (long i = 1; i <= warmup + iters; ++i) {
    if (i == warmup + 1) t0 = std::chrono::steady_clock::now();
    Line& mine = lines[(i & 1) * n + r];
    mine.value = r + static_cast<double>(i);
    mine.op.store(i, std::memory_order_release);
    double s = 0;
    for (int p = 0; p < n; ++p) {
      Line& l = lines[(i & 1) * n + p];
      for (int k = 0; l.op.load(std::memory_order_acquire) < i; ++k) {
        if (k >= spin) sched_yield();
        else SHM_FLOOR_RELAX();
      }
      s += l.value;
    }
    sum += s;
  }
  const double us = std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count();
  // The sums prove the values were read; each op's is known in closed form.
  double want = 0;
  for (long i = 1; i <= warmup + iters; ++i) want += n * static_cast<double>(i) + n * (n - 1) / 2.0;
  if (r == 0) {
    std::printf("shm_floor: %d processes, spin %d: %.2f us per 8 B all-reduce (%ld ops)%s\n", n, spin, us / iters,
                iters, sum == want ? "" : "  WRONG SUM");
    std::fflush(stdout);
  }
  _exit(sum == want ? 0 : 1);
}

}  // namespace

int main(int argc, char** argv) {
  const int n = argc > 1 ? std::atoi(argv[1]) : 4;
  const long iters = argc > 2 ? std::atol(argv[2]) : 200000;
  const int spin = argc > 3 ? std::atoi(argv[3]) : 0;
  if (n < 1 || n > 256 || iters < 1 || spin < 0) {
    std::fprintf(stderr, "usage: shm_floor [N (1..256)] [iters] [spin]\n");
    return 2;
  }
  void* mem = mmap(nullptr, sizeof(Line) * 2 * n, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (mem == MAP_FAILED) {
    std::perror("mmap");
    return 1;
  }
  auto* lines = new (mem) Line[2 * n]();
  for (int r = 0; r < n; ++r) {
    const pid_t pid = fork();
    if (pid < 0) {
      std::perror("fork");
      return 1;
    }
    if (pid == 0) rankLoop(lines, n, r, iters, spin);
  }
  int failed = 0;
  for (int r = 0; r < n; ++r) {
    int status = 0;
    wait(&status);
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) ++failed;
  }
  return failed ? 1 : 0;
}
