// DistributedSampler: every sample exactly once per epoch over the ranks, the
// interleaved-block rule against the global order, determinism across ranks
// and epochs, and resuming.
#include <algorithm>
#include <catch2/catch.hpp>
#include <map>
#include <numeric>
#include <stdexcept>

#include "data/sampler.h"

using coll::train::DistributedSampler;
using coll::train::SamplerState;
using coll::train::Xoshiro256ss;

namespace {

std::vector<DistributedSampler> makeRanks(int n, int nranks, int b, uint64_t seed, bool shuffle,
                                          bool dropLast) {
  std::vector<DistributedSampler> v;
  for (int r = 0; r < nranks; ++r) v.emplace_back(n, r, nranks, b, seed, shuffle, dropLast);
  return v;
}

bool isPermutation(std::vector<int> p, int n) {
  if (static_cast<int>(p.size()) != n) return false;
  std::sort(p.begin(), p.end());
  for (int i = 0; i < n; ++i) {
    if (p[size_t(i)] != i) return false;
  }
  return true;
}

}  // namespace

TEST_CASE("sampler: every sample exactly once per epoch (dropLast=false)", "[trainer_data][sampler]") {
  for (int nranks : {1, 2, 3, 4}) {
    for (int n : {0, 1, 2, 5, 17, 100, 101, 1000}) {
      for (int b : {1, 3, 8}) {
        auto ranks = makeRanks(n, nranks, b, 1234, true, false);
        for (int64_t epoch : {0, 1, 2, 7}) {
          CAPTURE(nranks, n, b, epoch);
          std::vector<int> all;
          int minCount = n + 1, maxCount = -1;
          for (auto& s : ranks) {
            s.setEpoch(epoch);
            std::vector<int> mine = s.indices();
            CHECK(static_cast<int>(mine.size()) == s.localCount());
            minCount = std::min(minCount, s.localCount());
            maxCount = std::max(maxCount, s.localCount());
            CHECK(s.numSteps() == ranks[0].numSteps());
            CHECK(s.numSteps() == (n + nranks * b - 1) / (nranks * b));
            all.insert(all.end(), mine.begin(), mine.end());
          }
          CHECK(isPermutation(all, n));  // union == all samples, no duplicates
          CHECK(maxCount - minCount <= 1);
        }
      }
    }
  }
}

TEST_CASE("sampler: dropLast=true gives equal full batches", "[trainer_data][sampler]") {
  for (int nranks : {1, 2, 3, 4}) {
    for (int n : {0, 5, 17, 100, 101}) {
      for (int b : {1, 3, 8}) {
        CAPTURE(nranks, n, b);
        auto ranks = makeRanks(n, nranks, b, 99, true, true);
        const int g = nranks * b;
        const int steps = n / g;
        std::vector<int> all;
        for (auto& s : ranks) {
          s.setEpoch(3);
          CHECK(s.numSteps() == steps);
          CHECK(s.localCount() == steps * b);
          for (int st = 0; st < steps; ++st) CHECK(s.batchSize(st) == b);
          auto mine = s.indices();
          all.insert(all.end(), mine.begin(), mine.end());
        }
        // Exactly the first steps*G samples of the epoch's order; no duplicates.
        std::vector<int> want = ranks[0].globalOrder(3);
        want.resize(size_t(steps * g));
        std::sort(want.begin(), want.end());
        std::sort(all.begin(), all.end());
        CHECK(all == want);
      }
    }
  }
}

TEST_CASE("sampler: rank batches at step s concatenate to the global batch", "[trainer_data][sampler]") {
  for (bool dropLast : {false, true}) {
    for (int nranks : {1, 2, 3, 4}) {
      for (int n : {1, 10, 37, 64, 1001}) {
        for (int b : {1, 4, 7}) {
          CAPTURE(dropLast, nranks, n, b);
          auto ranks = makeRanks(n, nranks, b, 7, true, dropLast);
          const int64_t epoch = 5;
          for (auto& s : ranks) s.setEpoch(epoch);
          const std::vector<int> perm = ranks[0].globalOrder(epoch);
          const int g = nranks * b;
          for (int step = 0; step < ranks[0].numSteps(); ++step) {
            std::vector<int> joined;
            for (int r = 0; r < nranks; ++r) {
              auto part = ranks[size_t(r)].batch(step);
              CHECK(static_cast<int>(part.size()) == ranks[size_t(r)].batchSize(step));
              // Full steps: rank r holds perm[(step*nranks + r)*B, +B).
              if ((step + 1) * g <= n) {
                std::vector<int> want(perm.begin() + (step * nranks + r) * b,
                                      perm.begin() + (step * nranks + r + 1) * b);
                CHECK(part == want);
              }
              joined.insert(joined.end(), part.begin(), part.end());
            }
            const int end = std::min(n, (step + 1) * g);
            std::vector<int> global(perm.begin() + step * g, perm.begin() + end);
            CHECK(joined == global);
            CHECK(ranks[0].globalBatchSize(step) == end - step * g);
          }
        }
      }
    }
  }
}

TEST_CASE("sampler: the last uneven step (dropLast=false)", "[trainer_data][sampler]") {
  // 10 samples, 4 ranks x B=2: one full step of 8, then 2 left: ranks 0 and
  // 1 get one each, ranks 2 and 3 an empty batch.
  auto ranks = makeRanks(10, 4, 2, 1, true, false);
  CHECK(ranks[0].numSteps() == 2);
  CHECK(ranks[0].batchSize(1) == 1);
  CHECK(ranks[1].batchSize(1) == 1);
  CHECK(ranks[2].batchSize(1) == 0);
  CHECK(ranks[3].batchSize(1) == 0);
  CHECK(ranks[3].batch(1).empty());
  CHECK(ranks[0].globalBatchSize(1) == 2);
  CHECK(ranks[0].localCount() == 3);
  CHECK(ranks[3].localCount() == 2);
  // next() still yields the (empty) last step, then reports the end.
  std::vector<int> b;
  CHECK(ranks[3].next(&b));
  CHECK(b.size() == 2);
  CHECK(ranks[3].next(&b));
  CHECK(b.empty());
  CHECK_FALSE(ranks[3].next(&b));
}

TEST_CASE("sampler: order depends on (seed, epoch) only", "[trainer_data][sampler]") {
  const int n = 500;
  auto ranks = makeRanks(n, 4, 8, 42, true, false);
  for (int64_t e = 0; e < 5; ++e) {
    const auto p = ranks[0].globalOrder(e);
    CHECK(isPermutation(p, n));
    for (auto& s : ranks) CHECK(s.globalOrder(e) == p);  // every rank agrees
    // A sampler with another split (1 rank, B=32) agrees as well.
    DistributedSampler one(n, 0, 1, 32, 42, true, false);
    CHECK(one.globalOrder(e) == p);
    // Epochs differ.
    CHECK(ranks[0].globalOrder(e + 1) != p);
  }
  // Seeds differ.
  DistributedSampler other(n, 0, 4, 8, 43, true, false);
  CHECK(other.globalOrder(0) != ranks[0].globalOrder(0));
  // Shuffle off: the identity, every epoch.
  DistributedSampler plain(n, 0, 1, 8, 42, false, false);
  std::vector<int> id(n);
  std::iota(id.begin(), id.end(), 0);
  CHECK(plain.globalOrder(0) == id);
  CHECK(plain.globalOrder(9) == id);
}

TEST_CASE("sampler: the generator is pinned (portable across libraries)", "[trainer_data][sampler]") {
  // Reference values from an independent implementation (Python) of the same
  // splitmix64 / xoshiro256** / Lemire / Fisher-Yates rule.
  uint64_t st = 0;
  CHECK(coll::train::splitmix64(&st) == 0xe220a8397b1dcdafull);
  Xoshiro256ss x(1);
  CHECK(x.next() == 0xb3f2af6d0fc710c5ull);
  CHECK(x.next() == 0x853b559647364ceaull);
  CHECK(x.next() == 0x92f89756082a4514ull);
  DistributedSampler s(10, 0, 1, 1, 42, true, false);
  CHECK(s.globalOrder(0) == std::vector<int>{4, 7, 1, 0, 3, 5, 8, 9, 2, 6});
  CHECK(s.globalOrder(1) == std::vector<int>{6, 0, 7, 4, 2, 8, 9, 1, 3, 5});
  DistributedSampler t(20, 0, 1, 1, 0x0123456789abcdefull, true, false);
  CHECK(t.globalOrder(7) ==
        std::vector<int>{19, 5, 18, 13, 8, 0, 11, 6, 4, 10, 7, 2, 17, 14, 1, 16, 9, 12, 15, 3});
}

TEST_CASE("sampler: shuffles are uniform enough", "[trainer_data][sampler]") {
  // All 24 orders of 4 elements over 4800 epochs: ~200 each.
  DistributedSampler s(4, 0, 1, 1, 5, true, false);
  std::map<std::vector<int>, int> seen;
  for (int64_t e = 0; e < 4800; ++e) ++seen[s.globalOrder(e)];
  CHECK(seen.size() == 24);
  for (const auto& [p, c] : seen) {
    CHECK(c > 130);
    CHECK(c < 270);
  }
}

TEST_CASE("sampler: restore continues identically", "[trainer_data][sampler]") {
  const int n = 103;
  DistributedSampler a(n, 1, 3, 4, 77, true, false);
  a.setEpoch(2);
  std::vector<int> b;
  for (int i = 0; i < 3; ++i) REQUIRE(a.next(&b));
  const SamplerState st = a.state();
  CHECK(st.epoch == 2);
  CHECK(st.step == 3);
  CHECK(st.globalBatch == 12);

  DistributedSampler c(n, 1, 3, 4, 77, true, false);
  REQUIRE(c.restore(st).isOk());
  CHECK(c.epoch() == 2);
  CHECK(c.step() == 3);
  std::vector<int> x, y;
  for (;;) {
    const bool more = a.next(&x);
    CHECK(c.next(&y) == more);
    CHECK(x == y);
    if (!more) break;
  }
  // The next epoch too.
  a.setEpoch(3);
  c.setEpoch(3);
  CHECK(a.indices() == c.indices());

  SECTION("another split of the same global batch resumes the same global order") {
    // 3 ranks x 4 -> 2 ranks x 6 (G = 12): the global batches are the same.
    std::vector<DistributedSampler> two = makeRanks(n, 2, 6, 77, true, false);
    std::vector<DistributedSampler> three = makeRanks(n, 3, 4, 77, true, false);
    for (auto& s : two) REQUIRE(s.restore(st).isOk());
    for (auto& s : three) REQUIRE(s.restore(st).isOk());
    for (int step = 3; step < two[0].numSteps(); ++step) {
      std::vector<int> g2, g3;
      for (auto& s : two) {
        auto p = s.batch(step);
        g2.insert(g2.end(), p.begin(), p.end());
      }
      for (auto& s : three) {
        auto p = s.batch(step);
        g3.insert(g3.end(), p.begin(), p.end());
      }
      CHECK(g2 == g3);
    }
  }
  SECTION("a state from a different order is refused") {
    DistributedSampler seed(n, 0, 3, 4, 78, true, false);
    CHECK_THAT(seed.restore(st).message(), Catch::Contains("seed"));
    DistributedSampler size(n + 1, 0, 3, 4, 77, true, false);
    CHECK_THAT(size.restore(st).message(), Catch::Contains("dataset"));
    DistributedSampler batch(n, 0, 3, 5, 77, true, false);
    CHECK_THAT(batch.restore(st).message(), Catch::Contains("global batch"));
    DistributedSampler drop(n, 0, 3, 4, 77, true, true);
    CHECK_THAT(drop.restore(st).message(), Catch::Contains("dropLast"));
    SamplerState bad = st;
    bad.step = 1000;
    CHECK_THAT(c.restore(bad).message(), Catch::Contains("invalid"));
  }
}

TEST_CASE("sampler: bad arguments throw", "[trainer_data][sampler]") {
  CHECK_THROWS_AS(DistributedSampler(-1, 0, 1, 1, 0, true, false), std::invalid_argument);
  CHECK_THROWS_AS(DistributedSampler(10, 2, 2, 1, 0, true, false), std::invalid_argument);
  CHECK_THROWS_AS(DistributedSampler(10, 0, 0, 1, 0, true, false), std::invalid_argument);
  CHECK_THROWS_AS(DistributedSampler(10, 0, 1, 0, 0, true, false), std::invalid_argument);
  DistributedSampler s(10, 0, 1, 1, 0, true, false);
  CHECK_THROWS_AS(s.setEpoch(-1), std::invalid_argument);
}
