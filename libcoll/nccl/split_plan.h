// split_plan.h — where ncclCommSplit puts each rank: a pure function of
// every parent rank's (color, key), testable without communicators.
#pragma once

#include <vector>

namespace coll::nccl {

struct SplitMember {
  int color;  // >= 0, or NCCL_SPLIT_NOCOLOR (-1): in no new communicator
  int key;
};

struct SplitPlace {
  int newRank = -1;  // -1: NCCL_SPLIT_NOCOLOR
  int newSize = 0;
  int leader = -1;   // the parent rank that is new rank 0 (it makes the id)
};

// members[r] is parent rank r's choice.  The ranks of one color are ordered
// by key, ties by parent rank, as NCCL orders them.
SplitPlace placeInSplit(const std::vector<SplitMember>& members, int rank);

}  // namespace coll::nccl
