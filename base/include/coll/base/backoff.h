// backoff.h — how every wait in libcoll waits: spin briefly, then yield,
// then sleep with growing naps.  8 ranks on 2 cores must still finish
// quickly, so a rank that cannot progress gives its core away early when
// the machine is oversubscribed (spinBudget is set from ranks per core).
#pragma once

#include <cstdint>

namespace coll {

class Backoff {
 public:
  explicit Backoff(uint32_t spinBudget = 2000, uint32_t yieldBudget = 200)
      : spinBudget_(spinBudget), yieldBudget_(yieldBudget) {}

  // Call after a poll that found nothing to do.  Returns true when the
  // caller should also run its slow checks (deadline, abort, peers): after
  // every yield/sleep and every 256 spins.
  bool pause();
  // Call after progress.
  void reset() { iter_ = 0; }
  // Spinning and yielding are used up: a caller that can sleep until woken
  // (a transport doorbell) should do that now rather than call pause().
  bool exhausted() const { return iter_ >= spinBudget_ + yieldBudget_; }
  uint32_t iterations() const { return iter_; }

 private:
  uint32_t spinBudget_;
  uint32_t yieldBudget_;
  uint32_t iter_ = 0;
};

// Spin budget for a process that shares the online CPUs with `localRanks`
// ranks (env COLL_SPIN overrides).  pollsAreSyscalls: one idle pass of the
// executor makes system calls (sockets), so a spin is not a pause but
// kernel time taken from the ranks we wait for.
uint32_t defaultSpinBudget(int localRanks, bool pollsAreSyscalls);
// Yields before sleeping on the doorbell (COLL_YIELD overrides): a few dozen
// yields beat both pure yielding and sleeping at once, since a futex wake-up
// costs more than a yield hand-off when the wait is short
// (docs/PERFORMANCE.md).
uint32_t defaultYieldBudget(int localRanks);

}  // namespace coll
