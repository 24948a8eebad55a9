// ringOrderGrouped (schedule/ring_order.h): each host's ranks together,
// hosts by their lowest rank, rank order kept inside; empty when nothing
// moves.
#include <catch2/catch.hpp>

#include "schedule/ring_order.h"

using coll::sched::ringOrderGrouped;

TEST_CASE("ring order: hosts dealt in turn are gathered", "[ring_order]") {
  CHECK(ringOrderGrouped({7, 9, 7, 9}) == std::vector<int>{0, 2, 1, 3});
  CHECK(ringOrderGrouped({5, 6, 7, 5, 6, 7}) == std::vector<int>{0, 3, 1, 4, 2, 5});
  // Hosts in the order of their lowest rank, whatever their ids.
  CHECK(ringOrderGrouped({9, 1, 9, 1, 1}) == std::vector<int>{0, 2, 1, 3, 4});
}

TEST_CASE("ring order: rank order when it already keeps hosts together", "[ring_order]") {
  CHECK(ringOrderGrouped({}).empty());
  CHECK(ringOrderGrouped({4}).empty());
  CHECK(ringOrderGrouped({4, 4, 4}).empty());
  CHECK(ringOrderGrouped({1, 1, 2, 2, 3}).empty());
  // A host's ranks need not be contiguous in id order, only in rank order.
  CHECK(ringOrderGrouped({3, 3, 1, 1}).empty());
}
