// algo_override.h — the one grammar for forcing algorithms (COLL_ALGO).
//
//   COLL_ALGO = entry[;entry...]
//   entry     = coll ':' rule[,rule...]  |  algo
//   rule      = algo ['@' lo '-' hi]      sizes in bytes, K/M/G suffixes, hi may be "inf"
//   coll      = allreduce | allgather | reducescatter | broadcast | reduce
//   algo      = ring | tree | oneshot | pipeline
// e.g. "allreduce:oneshot@0-4K,ring@4K-inf;broadcast:pipeline".  A bare algo
// applies to every collective that has it.  Ranges are [lo, hi).  Unknown
// names, algorithms a collective does not have, and malformed sizes are
// errors that name the offending text.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "schedule/schedules.h"
#include "coll/base/status.h"

namespace coll::tune {

struct AlgoRule {
  sched::CollKind coll;
  sched::Algo algo;
  size_t lo = 0;
  size_t hi = SIZE_MAX;  // exclusive; SIZE_MAX = inf
};

class AlgoOverride {
 public:
  static Result<AlgoOverride> parse(const std::string& text);
  // The forced algorithm for (coll, bytes), if a rule covers it.
  std::optional<sched::Algo> lookup(sched::CollKind coll, size_t bytes) const;
  const std::vector<AlgoRule>& rules() const { return rules_; }

 private:
  std::vector<AlgoRule> rules_;
};

}  // namespace coll::tune
