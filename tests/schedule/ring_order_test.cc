// ringOrderGrouped (schedule/ring_order.h): each host's ranks together,
// hosts by their lowest rank, and inside a host each NUMA node's ranks;
// rank order kept inside a group; empty when nothing moves.
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

TEST_CASE("ring order: NUMA nodes gathered inside each host, hosts first", "[ring_order]") {
  // One host, two sockets, ranks bound to them in turn.
  CHECK(ringOrderGrouped({1, 1, 1, 1}, {0, 1, 0, 1}) == std::vector<int>{0, 2, 1, 3});
  // Two hosts dealt in turn, and inside each its ranks on two nodes in turn:
  // host 5 holds ranks 0 2 4 6 (nodes 0 1 0 1), host 6 ranks 1 3 5 7.
  CHECK(ringOrderGrouped({5, 6, 5, 6, 5, 6, 5, 6}, {0, 0, 1, 1, 0, 0, 1, 1}) ==
        std::vector<int>{0, 4, 2, 6, 1, 5, 3, 7});
  // Equal node numbers on two hosts are two groups: hosts stay whole.
  CHECK(ringOrderGrouped({5, 6, 6, 5}, {0, 0, 0, 0}) == std::vector<int>{0, 3, 1, 2});
  // Nodes by their lowest rank inside the host, whatever their numbers; an
  // unknown node (all ones: -1) is a group like any other.
  CHECK(ringOrderGrouped({2, 2, 2, 2, 2}, {3, ~0ull, 3, 0, ~0ull}) == std::vector<int>{0, 2, 1, 4, 3});
}

TEST_CASE("ring order: rank order when hosts and nodes are together already", "[ring_order]") {
  CHECK(ringOrderGrouped({1, 1, 1, 1}, {0, 0, 1, 1}).empty());
  CHECK(ringOrderGrouped({1, 1, 2, 2}, {0, 1, 0, 1}).empty());
  CHECK(ringOrderGrouped({}, {}).empty());
}
