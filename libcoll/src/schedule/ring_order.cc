#include "schedule/ring_order.h"

#include <algorithm>
#include <numeric>
#include <tuple>
#include <utility>

namespace coll::sched {
namespace {

// Each rank's group as the index of the group's first appearance.
template <typename Key>
std::vector<int> firstAppearance(const std::vector<Key>& keyOfRank) {
  std::vector<int> index(keyOfRank.size());
  std::vector<Key> seen;
  for (size_t r = 0; r < keyOfRank.size(); ++r) {
    auto it = std::find(seen.begin(), seen.end(), keyOfRank[r]);
    index[r] = static_cast<int>(it - seen.begin());
    if (it == seen.end()) seen.push_back(keyOfRank[r]);
  }
  return index;
}

}  // namespace

std::vector<int> ringOrderGrouped(const std::vector<uint64_t>& groupOfRank) {
  return ringOrderGrouped(groupOfRank, std::vector<uint64_t>(groupOfRank.size(), 0));
}

std::vector<int> ringOrderGrouped(const std::vector<uint64_t>& outer, const std::vector<uint64_t>& inner) {
  const int n = static_cast<int>(outer.size());
  std::vector<std::pair<uint64_t, uint64_t>> both(n);
  for (int r = 0; r < n; ++r) both[r] = {outer[r], inner[r]};
  // An inner group's first rank is its lowest, so the order of first
  // appearance is the order of lowest rank inside each outer group too.
  const std::vector<int> outerIndex = firstAppearance(outer);
  const std::vector<int> innerIndex = firstAppearance(both);
  std::vector<int> order(n);
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](int a, int b) {
    return std::tie(outerIndex[a], innerIndex[a]) < std::tie(outerIndex[b], innerIndex[b]);
  });
  for (int i = 0; i < n; ++i)
    if (order[i] != i) return order;
  return {};
}

}  // namespace coll::sched
