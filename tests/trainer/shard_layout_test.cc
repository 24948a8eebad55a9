// The sharded optimizer's layout (trainer/ddp/shard_layout.h): every element
// of every tensor is updated by exactly one rank or, in a tail, by all of
// them, and the pieces are collReduceScatter's in-place layout.
#include <catch2/catch.hpp>

#include <stdexcept>
#include <vector>

#include "ddp/shard_layout.h"

using coll::train::ShardLayout;
using coll::train::shardTensors;

TEST_CASE("shardTensors: pieces of count/N per rank, the remainder a shared tail", "[trainer][shard]") {
  const ShardLayout l = shardTensors({10, 3, 2, 0, 9}, 1, 3);
  REQUIRE(l.tensors.size() == 5);
  CHECK(l.tensors[0].piece == 3);
  CHECK(l.tensors[0].begin == 3);
  CHECK(l.tensors[0].end == 6);
  CHECK(l.tensors[0].tail == 9);  // element 9 is everybody's
  CHECK(l.tensors[1].piece == 1);
  CHECK(l.tensors[1].begin == 1);
  CHECK(l.tensors[1].tail == 3);  // no tail
  CHECK(l.tensors[2].piece == 0);  // 2 < 3 ranks: all tail
  CHECK(l.tensors[2].begin == l.tensors[2].end);
  CHECK(l.tensors[2].tail == 0);
  CHECK(l.tensors[3].count == 0);
  CHECK(l.tensors[4].begin == 3);
  CHECK(l.tensors[4].end == 6);
  // 3 + 1 of a piece + 1 tail, 1, 0 + 2 tail, 0, 3
  CHECK(l.updatedElements() == (3 + 1) + 1 + 2 + 0 + 3);
}

TEST_CASE("shardTensors covers every element once across ranks (tails: on every rank)", "[trainer][shard]") {
  const std::vector<size_t> counts = {0, 1, 2, 5, 7, 64, 50176, 1000003};
  for (int n = 1; n <= 9; ++n) {
    std::vector<std::vector<int>> owners;
    for (size_t c : counts) owners.emplace_back(c, 0);
    size_t updated = 0;
    for (int r = 0; r < n; ++r) {
      const ShardLayout l = shardTensors(counts, r, n);
      REQUIRE(l.rank == r);
      REQUIRE(l.nranks == n);
      updated += l.updatedElements();
      for (size_t t = 0; t < counts.size(); ++t) {
        const auto& s = l.tensors[t];
        REQUIRE(s.count == counts[t]);
        REQUIRE(s.begin == static_cast<size_t>(r) * s.piece);  // in-place reduce-scatter / all-gather
        REQUIRE(s.end - s.begin == s.piece);
        REQUIRE(s.tail == static_cast<size_t>(n) * s.piece);
        REQUIRE(s.count - s.tail < static_cast<size_t>(n));
        for (size_t k = s.begin; k < s.end; ++k) ++owners[t][k];
      }
    }
    size_t expect = 0;
    for (size_t t = 0; t < counts.size(); ++t) {
      const size_t tail = counts[t] / n * n;
      expect += tail + (counts[t] - tail) * n;
      size_t wrong = 0, first = 0;
      for (size_t k = 0; k < counts[t]; ++k)
        if (owners[t][k] != (k < tail ? 1 : 0) && wrong++ == 0) first = k;
      INFO("nranks " << n << " tensor " << t << ": first element with the wrong number of owners " << first);
      REQUIRE(wrong == 0);
    }
    CHECK(updated == expect);
  }
}

TEST_CASE("shardTensors rejects a rank outside [0, nranks)", "[trainer][shard]") {
  CHECK_THROWS_AS(shardTensors({4}, 2, 2), std::invalid_argument);
  CHECK_THROWS_AS(shardTensors({4}, -1, 2), std::invalid_argument);
  CHECK_THROWS_AS(shardTensors({4}, 0, 0), std::invalid_argument);
}
