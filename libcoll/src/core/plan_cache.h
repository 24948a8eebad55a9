// plan_cache.h — the last few (decision, schedule) pairs of a communicator,
// so a loop of identical calls builds its schedule once.  A schedule depends
// only on (collective, count, element size, root) for a given comm.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>

#include "schedule/schedules.h"
#include "tuner/tuner.h"

namespace coll::core {

struct Plan {
  tune::Decision decision;
  sched::Schedule schedule;
};

class PlanCache {
 public:
  // The cached plan for the key, or null.  Shared: a group may hold plans
  // longer than they stay in the cache.
  std::shared_ptr<const Plan> find(sched::CollKind k, size_t count, size_t elemSize, int root);
  std::shared_ptr<const Plan> insert(sched::CollKind k, size_t count, size_t elemSize, int root, Plan plan);

 private:
  struct Entry {
    bool used = false;
    sched::CollKind k{};
    size_t count = 0;
    size_t elemSize = 0;
    int root = 0;
    uint64_t stamp = 0;
    std::shared_ptr<const Plan> plan;
  };
  static constexpr int kEntries = 16;
  std::array<Entry, kEntries> entries_;
  uint64_t clock_ = 0;
};

}  // namespace coll::core
