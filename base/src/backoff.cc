#include "coll/base/backoff.h"

#include <sched.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>

#include "coll/base/settings.h"

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define COLL_CPU_RELAX() _mm_pause()
#elif defined(__aarch64__)
#define COLL_CPU_RELAX() asm volatile("yield" ::: "memory")
#else
#define COLL_CPU_RELAX() asm volatile("" ::: "memory")
#endif

namespace coll {

bool Backoff::pause() {
  uint32_t i = iter_++;
  if (i < spinBudget_) {
    COLL_CPU_RELAX();
    return (i & 255) == 255;
  }
  if (i < spinBudget_ + yieldBudget_) {
    sched_yield();
    return true;
  }
  // Naps grow from 1 us to 100 us: an idle rank costs little CPU, and a
  // peer's message is still seen within ~0.1 ms.
  uint32_t over = i - spinBudget_ - yieldBudget_;
  long ns = std::min<long>(1000L << std::min<uint32_t>(over / 16, 7), 100000L);
  timespec ts{0, ns};
  nanosleep(&ts, nullptr);
  return true;
}

uint32_t defaultSpinBudget(int localRanks, bool pollsAreSyscalls) {
  // A bad value failed init (settings::checkAll); here it is the default.
  auto spin = settings::readInt("COLL_SPIN");
  if (spin.isOk() && spin.value()) return static_cast<uint32_t>(*spin.value());
  long cores = sysconf(_SC_NPROCESSORS_ONLN);
  if (cores <= 0) cores = 1;
  // Oversubscribed: a spinning rank steals the core from the peer it waits
  // for, so yield almost at once; over sockets, where every idle pass is a
  // recv per connection, at once.  Measured with 8 ranks on 2 cores,
  // loopback TCP, 16 spins against none: all-reduce 1.11-1.26x faster
  // without up to 64 KiB, reduce-scatter 1.42x, all-gather 1.16-1.25x; at N
  // = 3 and 4 1.06-1.20x.  On shm a pass is a few loads and the answer is
  // mixed (without: 8 B all-reduce 0.87-0.90x at N = 4, 1.1x at N = 8; 1-64
  // KiB at N = 8 1.05-1.19x), so shm keeps its 16.
  if (localRanks > cores) return pollsAreSyscalls ? 0 : 16;
  return 4000;
}

}  // namespace coll

namespace coll {

uint32_t defaultYieldBudget(int localRanks) {
  auto y = settings::readInt("COLL_YIELD");
  if (y.isOk() && y.value()) return static_cast<uint32_t>(*y.value());
  long cores = sysconf(_SC_NPROCESSORS_ONLN);
  if (cores <= 0) cores = 1;
  return localRanks > cores ? 50 : 200;
}

}  // namespace coll
