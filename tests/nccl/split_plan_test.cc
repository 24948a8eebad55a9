// ncclCommSplit's placement (libcoll/nccl/split_plan.h): colors apart, key
// order with ties by parent rank, NCCL_SPLIT_NOCOLOR in none.
#include <catch2/catch.hpp>

#include "split_plan.h"

using coll::nccl::placeInSplit;
using coll::nccl::SplitMember;

TEST_CASE("split: one color keeps the parent's order when keys tie", "[nccl][split]") {
  std::vector<SplitMember> m(5, SplitMember{0, 7});
  for (int r = 0; r < 5; r++) {
    auto p = placeInSplit(m, r);
    CHECK(p.newRank == r);
    CHECK(p.newSize == 5);
    CHECK(p.leader == 0);
  }
}

TEST_CASE("split: colors apart, ordered by key then parent rank", "[nccl][split]") {
  // parent rank:        0        1        2        3        4        5
  std::vector<SplitMember> m{{1, 5}, {0, 2}, {1, -3}, {0, 2}, {-1, 0}, {1, 5}};
  auto p0 = placeInSplit(m, 0), p2 = placeInSplit(m, 2), p5 = placeInSplit(m, 5);
  CHECK(p2.newRank == 0);  // key -3 first
  CHECK(p0.newRank == 1);  // key 5, parent rank 0 before 5
  CHECK(p5.newRank == 2);
  CHECK(p0.newSize == 3);
  CHECK(p0.leader == 2);
  CHECK(p5.leader == 2);
  auto p1 = placeInSplit(m, 1), p3 = placeInSplit(m, 3);
  CHECK(p1.newRank == 0);
  CHECK(p3.newRank == 1);
  CHECK(p1.newSize == 2);
  CHECK(p3.leader == 1);
  auto p4 = placeInSplit(m, 4);
  CHECK(p4.newRank == -1);
  CHECK(p4.newSize == 0);
  CHECK(p4.leader == -1);
}
