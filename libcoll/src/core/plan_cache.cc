#include "core/plan_cache.h"

namespace coll::core {

std::shared_ptr<const Plan> PlanCache::find(sched::CollKind k, size_t count, size_t elemSize, int root) {
  for (Entry& e : entries_)
    if (e.used && e.k == k && e.count == count && e.elemSize == elemSize && e.root == root) {
      e.stamp = ++clock_;
      return e.plan;
    }
  return nullptr;
}

std::shared_ptr<const Plan> PlanCache::insert(sched::CollKind k, size_t count, size_t elemSize, int root, Plan plan) {
  Entry* victim = &entries_[0];
  for (Entry& e : entries_) {
    if (!e.used) {
      victim = &e;
      break;
    }
    if (e.stamp < victim->stamp) victim = &e;
  }
  *victim = Entry{true, k, count, elemSize, root, ++clock_, std::make_shared<const Plan>(std::move(plan))};
  return victim->plan;
}

}  // namespace coll::core
