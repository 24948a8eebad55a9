#include "schedule/ring_order.h"

#include <algorithm>
#include <numeric>

namespace coll::sched {

std::vector<int> ringOrderGrouped(const std::vector<uint64_t>& groupOfRank) {
  const int n = static_cast<int>(groupOfRank.size());
  // Each group's rank in the order of first appearance.
  std::vector<int> groupIndex(n);
  std::vector<uint64_t> seen;
  for (int r = 0; r < n; ++r) {
    auto it = std::find(seen.begin(), seen.end(), groupOfRank[r]);
    groupIndex[r] = static_cast<int>(it - seen.begin());
    if (it == seen.end()) seen.push_back(groupOfRank[r]);
  }
  std::vector<int> order(n);
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](int a, int b) { return groupIndex[a] < groupIndex[b]; });
  for (int i = 0; i < n; ++i)
    if (order[i] != i) return order;
  return {};
}

}  // namespace coll::sched
