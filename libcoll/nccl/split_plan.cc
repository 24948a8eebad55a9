#include "split_plan.h"

#include <algorithm>

namespace coll::nccl {

SplitPlace placeInSplit(const std::vector<SplitMember>& members, int rank) {
  SplitPlace p;
  const int color = members[rank].color;
  if (color < 0) return p;
  std::vector<int> group;  // parent ranks of my color
  for (int r = 0; r < static_cast<int>(members.size()); r++)
    if (members[r].color == color) group.push_back(r);
  std::stable_sort(group.begin(), group.end(), [&](int a, int b) { return members[a].key < members[b].key; });
  p.newSize = static_cast<int>(group.size());
  p.newRank = static_cast<int>(std::find(group.begin(), group.end(), rank) - group.begin());
  p.leader = group.front();
  return p;
}

}  // namespace coll::nccl
