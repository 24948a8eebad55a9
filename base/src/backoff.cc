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
  // recv per connection, at once.  On shm a pass is a few loads and not
  // spinning measured mixed, so shm keeps 16 (docs/PERFORMANCE.md, "No
  // spinning over sockets on shared cores").
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
