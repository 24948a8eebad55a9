#include "util/backoff.h"

#include <sched.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>

#include "util/env.h"

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

uint32_t defaultSpinBudget(int localRanks) {
  long spin = env::getInt("COLL_SPIN", -1);
  if (spin >= 0) return static_cast<uint32_t>(spin);
  long cores = sysconf(_SC_NPROCESSORS_ONLN);
  if (cores <= 0) cores = 1;
  // Oversubscribed: a spinning rank steals the core from the peer it waits
  // for, so yield almost at once.
  if (localRanks > cores) return 16;
  return 4000;
}

}  // namespace coll

namespace coll {

uint32_t defaultYieldBudget(int localRanks) {
  long y = env::getInt("COLL_YIELD", -1);
  if (y >= 0) return static_cast<uint32_t>(y);
  long cores = sysconf(_SC_NPROCESSORS_ONLN);
  if (cores <= 0) cores = 1;
  return localRanks > cores ? 50 : 200;
}

}  // namespace coll
