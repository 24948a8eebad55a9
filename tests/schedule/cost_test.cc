// cost_test.cc — the alpha-beta model: known values, edge cases, and the
// hop counts checked against the critical path the simulator measures.
#include <catch2/catch.hpp>

#include <cmath>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "harness.h"
#include "schedule/cost.h"
#include "schedule/tree_shape.h"

using namespace coll::sched;
using coll::simtest::Case;
using coll::simtest::runCase;

namespace {

const LinkCost kLink{1e-6, 1e-10};  // 1 us per hop, 10 GB/s

double predict(CollKind k, Algo a, int N, size_t bytes, Chunking c, size_t elem = 4) {
  return predictSeconds(k, a, N, bytes, kLink, c, elem);
}

}  // namespace

TEST_CASE("ring all-reduce: 2(N-1)L a + 2(N-1)/N S b", "[cost]") {
  // N = 4, 1 MB of floats, one loop: 6 hops + 1.5 MB on the wire.
  CHECK(predict(CollKind::AllReduce, Algo::Ring, 4, 1000000, {1, 1 << 20}) ==
        Approx(6e-6 + 1.5e6 * 1e-10));
  // The 4-argument form assumes 4-byte elements.
  CHECK(predictSeconds(CollKind::AllReduce, Algo::Ring, 4, 1000000, kLink, {1, 1 << 20}) ==
        Approx(6e-6 + 1.5e-4));
  // 2 channels of 125000 elements, loops of 4*1024: L = 31 -> 186 hops.
  const CostTerms t = costTerms(CollKind::AllReduce, Algo::Ring, 4, 1000000, {2, 1024}, 4);
  CHECK(t.chunks == 31);
  CHECK(t.hops == 186);
  CHECK(t.byteTerm == Approx(1.5e6));
  // Doubles: half the elements, so fewer loops.
  CHECK(costTerms(CollKind::AllReduce, Algo::Ring, 4, 1000000, {2, 1024}, 8).chunks == 16);
}

TEST_CASE("ring all-gather and reduce-scatter: (N-1)k a + (N-1)/N S b", "[cost]") {
  for (auto k : {CollKind::AllGather, CollKind::ReduceScatter})
    CHECK(predict(k, Algo::Ring, 4, 4000000, {1, 1 << 20}) == Approx(3e-6 + 3e6 * 1e-10));
  // Per-rank count 250000 floats, chunks of 65536: k = 4.
  CHECK(costTerms(CollKind::AllGather, Algo::Ring, 4, 4000000, {1, 65536}, 4).hops == 12);
}

TEST_CASE("pipeline broadcast / reduce: (N+k-2)(a + S/k b)", "[cost]") {
  const size_t S = 1 << 20;  // 262144 floats, chunks of 65536: k = 4
  for (auto k : {CollKind::Broadcast, CollKind::Reduce}) {
    CHECK(predict(k, Algo::Pipeline, 8, S, {1, 65536}) == Approx(10e-6 + 10.0 / 4 * S * 1e-10));
    // One chunk: store and forward down the chain, (N-1)(a + S b).
    CHECK(predict(k, Algo::Pipeline, 8, S, {1, 1 << 30}) == Approx(7 * (1e-6 + S * 1e-10)));
  }
}

TEST_CASE("tree all-reduce: (2D+k-1) a + (2D f/k + (3f+g)(k-1)/k) S b", "[cost]") {
  const size_t S = 1 << 20;  // 262144 floats; 2 channels of 131072, chunks of 65536: k = 2
  const CostTerms t = costTerms(CollKind::AllReduce, Algo::Tree, 8, S, {2, 65536}, 4);
  CHECK(t.chunks == 2);
  CHECK(t.hops == 7);                             // D = 3
  CHECK(t.byteTerm == Approx((1.5 + 1.0) * S));   // 2*3*0.5/2 + 2*(1/2)
  // Large k, balanced trees: -> 2 S b, the ring's bandwidth for large N.
  const CostTerms big = costTerms(CollKind::AllReduce, Algo::Tree, 8, size_t{1} << 30, {2, 1024}, 4);
  CHECK(big.byteTerm / static_cast<double>(size_t{1} << 30) == Approx(2.0).epsilon(0.01));
  // One channel: one tree carries everything, 3 S b.
  const CostTerms one = costTerms(CollKind::AllReduce, Algo::Tree, 8, size_t{1} << 30, {1, 1024}, 4);
  CHECK(one.byteTerm / static_cast<double>(size_t{1} << 30) == Approx(3.0).epsilon(0.01));
  // Fewer hops than the ring for small messages on many ranks.
  CHECK(predict(CollKind::AllReduce, Algo::Tree, 64, 1024, {2, 1 << 20}) <
        predict(CollKind::AllReduce, Algo::Ring, 64, 1024, {2, 1 << 20}));
}

TEST_CASE("one-shot and direct", "[cost]") {
  CHECK(predict(CollKind::AllReduce, Algo::OneShot, 4, 4096, {1, 1 << 20}) ==
        Approx(1e-6 + 3 * 4096 * 1e-10));
  CHECK(predict(CollKind::Send, Algo::Direct, 2, 1 << 20, {1, 65536}) ==
        Approx(4e-6 + (1 << 20) * 1e-10));
  CHECK(predict(CollKind::Recv, Algo::Direct, 2, 1 << 20, {1, 65536}) ==
        predict(CollKind::Send, Algo::Direct, 2, 1 << 20, {1, 65536}));
  // One-shot wins small messages, ring large ones (N = 8).
  CHECK(predict(CollKind::AllReduce, Algo::OneShot, 8, 1024, {1, 1 << 20}) <
        predict(CollKind::AllReduce, Algo::Ring, 8, 1024, {1, 1 << 20}));
  CHECK(predict(CollKind::AllReduce, Algo::OneShot, 8, 64 << 20, {1, 1 << 20}) >
        predict(CollKind::AllReduce, Algo::Ring, 8, 64 << 20, {1, 1 << 20}));
}

TEST_CASE("one-shot all-gather and broadcast: one hop per chunk", "[cost]") {
  // All-gather: the ring's bytes ((N-1)/N S), k hops instead of (N-1)k.
  const size_t S = 4 * 4096;  // 4 ranks x 1024 floats
  const CostTerms one = costTerms(CollKind::AllGather, Algo::OneShot, 4, S, {1, 1 << 20}, 4);
  const CostTerms ring = costTerms(CollKind::AllGather, Algo::Ring, 4, S, {1, 1 << 20}, 4);
  CHECK(one.hops == 1);
  CHECK(ring.hops == 3);
  CHECK(one.byteTerm == Approx(ring.byteTerm));
  CHECK(costTerms(CollKind::AllGather, Algo::OneShot, 4, S, {1, 256}, 4).hops == 4);
  // Reduce-scatter: the all-gather's mirror, terms alike.
  const CostTerms rs = costTerms(CollKind::ReduceScatter, Algo::OneShot, 4, S, {1, 1 << 20}, 4);
  CHECK(rs.hops == one.hops);
  CHECK(rs.byteTerm == Approx(one.byteTerm));
  CHECK(rs.extraMessages == one.extraMessages);
  CHECK(rs.totalBytes == Approx(costTerms(CollKind::ReduceScatter, Algo::Ring, 4, S, {1, 1 << 20}, 4).totalBytes));
  CHECK(std::string(costFormula(CollKind::ReduceScatter, Algo::OneShot)) == "k a + 2(N-2)k o + (N-1)/N S/B");
  // Broadcast: every copy leaves the root, k a + (N-1) S b.
  CHECK(predict(CollKind::Broadcast, Algo::OneShot, 4, 4096, {1, 1 << 20}) == Approx(1e-6 + 3 * 4096 * 1e-10));
  // One hop beats the chain for small buffers, the chain wins large ones.
  CHECK(predict(CollKind::Broadcast, Algo::OneShot, 8, 1024, {1, 1 << 20}) <
        predict(CollKind::Broadcast, Algo::Pipeline, 8, 1024, {1, 1 << 20}));
  CHECK(predict(CollKind::Broadcast, Algo::OneShot, 8, 64 << 20, {1, 1 << 16}) >
        predict(CollKind::Broadcast, Algo::Pipeline, 8, 64 << 20, {1, 1 << 16}));
  CHECK(std::string(costFormula(CollKind::AllGather, Algo::OneShot)) == "k a + 2(N-2)k o + (N-1)/N S/B");
  CHECK(std::string(costFormula(CollKind::Broadcast, Algo::OneShot)) == "k a + (N-2)k o + (N-1) S/B");
  // The per-message overhead: every further message of one hop (N-1 sends
  // and N-1 receives per chunk; the broadcast's root sends N-1).
  CHECK(costTerms(CollKind::AllGather, Algo::OneShot, 4, S, {1, 1 << 20}, 4).extraMessages == 4);
  CHECK(costTerms(CollKind::AllReduce, Algo::OneShot, 8, 1024, {1, 64}, 4).extraMessages == 12 * 4);
  CHECK(costTerms(CollKind::Broadcast, Algo::OneShot, 5, 1024, {1, 1 << 20}, 4).extraMessages == 3);
  CHECK(costTerms(CollKind::AllReduce, Algo::OneShot, 2, 1024, {1, 1 << 20}, 4).extraMessages == 0);
  for (Algo a : {Algo::Ring, Algo::Tree, Algo::Doubling})
    CHECK(costTerms(CollKind::AllReduce, a, 8, 1 << 20, {2, 4096}, 4).extraMessages == 0);
  LinkCost withOverhead = kLink;
  withOverhead.overhead = 2e-6;
  CHECK(predictSeconds(CollKind::AllGather, Algo::OneShot, 4, S, withOverhead, {1, 1 << 20}, 4) ==
        Approx(predict(CollKind::AllGather, Algo::OneShot, 4, S, {1, 1 << 20}) + 4 * 2e-6));
}

TEST_CASE("tree broadcast: L k a + L S b, L = ceil(log2 N)", "[cost]") {
  // N = 8, 4 KiB, one chunk: 3 hops and 3 copies out of the root.
  const CostTerms t = costTerms(CollKind::Broadcast, Algo::Tree, 8, 4096, {1, 1 << 20}, 4);
  CHECK(t.hops == 3);
  CHECK(t.byteTerm == Approx(3 * 4096));
  CHECK(predict(CollKind::Broadcast, Algo::Tree, 5, 4096, {1, 256}) == Approx(3 * 4 * 1e-6 + 3 * 4096 * 1e-10));
  // Fewer hops than the chain for small buffers from N = 4 on; the chain
  // wins large ones (it carries one copy per link, the root's port L).
  for (int N : {4, 8, 16})
    CHECK(predict(CollKind::Broadcast, Algo::Tree, N, 1024, {1, 1 << 20}) <
          predict(CollKind::Broadcast, Algo::Pipeline, N, 1024, {1, 1 << 20}));
  CHECK(predict(CollKind::Broadcast, Algo::Tree, 3, 1024, {1, 1 << 20}) ==
        Approx(predict(CollKind::Broadcast, Algo::Pipeline, 3, 1024, {1, 1 << 20})));
  CHECK(predict(CollKind::Broadcast, Algo::Tree, 8, 64 << 20, {1, 1 << 20}) >
        predict(CollKind::Broadcast, Algo::Pipeline, 8, 64 << 20, {1, 1 << 16}));
  CHECK(std::string(costFormula(CollKind::Broadcast, Algo::Tree)) == "L k a + L S/B");
}

TEST_CASE("edge cases: one rank, no bytes, unsupported pairs, formula text", "[cost]") {
  for (auto k : {CollKind::AllReduce, CollKind::AllGather, CollKind::ReduceScatter,
                 CollKind::Broadcast, CollKind::Reduce, CollKind::Send, CollKind::Recv})
    for (auto a : {Algo::Ring, Algo::Tree, Algo::OneShot, Algo::Pipeline, Algo::Direct, Algo::Doubling, Algo::Halving}) {
      const std::string f = costFormula(k, a);
      if (!algoSupports(k, a)) {
        CHECK(std::isinf(predict(k, a, 4, 1000, {})));
        CHECK(f == "n/a");
        continue;
      }
      INFO(collKindName(k) << "/" << algoName(a));
      CHECK(predict(k, a, 1, 1 << 20, {}) == 0.0);
      CHECK(predict(k, a, 8, 0, {}) == 0.0);
      CHECK(predict(k, a, 8, 1 << 20, {}) > 0.0);
      CHECK(f.find('a') != std::string::npos);
      CHECK(f.find("S/") != std::string::npos);
    }
  CHECK(std::string(costFormula(CollKind::AllReduce, Algo::Ring)) == "2(N-1)L a + 2(N-1)/N S/B");
}

TEST_CASE("hop counts match the simulated critical path", "[cost]") {
  auto rounds = [](CollKind k, Algo a, int N, size_t count, Chunking ch) {
    Case c;
    c.kind = k;
    c.algo = a;
    c.nranks = N;
    c.count = count;
    c.chunking = ch;
    const auto o = runCase(c);
    INFO(coll::simtest::describe(c));
    REQUIRE(o.failures.empty());
    return o.rounds;
  };
  auto hops = [](CollKind k, Algo a, int N, size_t count, Chunking ch) {
    size_t bytes = count * 4;
    if (k == CollKind::AllGather || k == CollKind::ReduceScatter) bytes *= static_cast<size_t>(N);
    return costTerms(k, a, N, bytes, ch, 4);
  };
  for (int N : {2, 3, 5, 8}) {
    for (Chunking ch : {Chunking{1, 16}, Chunking{2, 64}, Chunking{1, 1 << 20}}) {
      const size_t count = 1024;
      INFO("N=" << N << " nch=" << ch.nchannels << " chunk=" << ch.chunkElems);
      // Ring all-reduce: each loop is 2N-1 steps (2(N-1) hops + the first Send).
      auto t = hops(CollKind::AllReduce, Algo::Ring, N, count, ch);
      CHECK(rounds(CollKind::AllReduce, Algo::Ring, N, count, ch) == t.chunks * (2 * N - 1));
      CHECK(t.hops == static_cast<double>(t.chunks * 2 * (N - 1)));
      // Reduce-scatter: N steps per chunk ((N-1) hops + the first Send).
      t = hops(CollKind::ReduceScatter, Algo::Ring, N, count, ch);
      CHECK(rounds(CollKind::ReduceScatter, Algo::Ring, N, count, ch) == t.chunks * N);
      // One-shot reduce-scatter: per chunk N-1 sends, then N-1 receives,
      // one step each in the simulator: the hop's send and receive plus
      // the extra messages the model prices at o.
      t = hops(CollKind::ReduceScatter, Algo::OneShot, N, count, ch);
      CHECK(rounds(CollKind::ReduceScatter, Algo::OneShot, N, count, ch) ==
            static_cast<size_t>(2 * t.hops + t.extraMessages));
      // Pipeline reduce: N+k-2 hops + the first Send.
      t = hops(CollKind::Reduce, Algo::Pipeline, N, count, ch);
      CHECK(rounds(CollKind::Reduce, Algo::Pipeline, N, count, ch) ==
            static_cast<size_t>(t.hops) + 1);
      // Direct: k hops + 1.
      t = hops(CollKind::Send, Algo::Direct, 2, count, ch);
      CHECK(rounds(CollKind::Send, Algo::Direct, 2, count, ch) == static_cast<size_t>(t.hops) + 1);
      // Tree: the first chunk's 2D hops, then about 4 steps per chunk at the
      // two-child ranks; pipelined, not 2D per chunk.
      t = hops(CollKind::AllReduce, Algo::Tree, N, count, ch);
      const size_t D = static_cast<size_t>(doubleBinaryTreeDepth(N));
      const size_t r = rounds(CollKind::AllReduce, Algo::Tree, N, count, ch);
      CHECK(r >= 2 * D + 1);
      CHECK(r <= 4 * t.chunks + 3 * D + 3);
      // Tree broadcast: the root's L sends of each chunk in turn, which the
      // subtrees keep up with, then its k own-data copies (local: not in
      // the model; for one chunk the last leaf's Recv takes as long).
      t = hops(CollKind::Broadcast, Algo::Tree, N, count, ch);
      CHECK(rounds(CollKind::Broadcast, Algo::Tree, N, count, ch) == static_cast<size_t>(t.hops) + t.chunks);
    }
  }
}

TEST_CASE("totalBytes is what all ranks send together, as simulated", "[cost]") {
  // The tuner floors the byte term with totalBytes / CPUs where ranks share
  // CPUs: it must count every byte every schedule sends, no more.
  // Every pair the schedules have (Recv is Send's other side).
  std::vector<std::pair<CollKind, Algo>> pairs;
  for (int ki = 0; ki <= static_cast<int>(CollKind::Send); ++ki)
    for (int ai = 0; ai <= static_cast<int>(Algo::Halving); ++ai)
      if (algoSupports(static_cast<CollKind>(ki), static_cast<Algo>(ai)))
        pairs.emplace_back(static_cast<CollKind>(ki), static_cast<Algo>(ai));
  REQUIRE(pairs.size() == 16);
  for (const auto& [k, a] : pairs) {
    for (int N : {2, 3, 4, 5, 6, 7, 8, 12, 13, 16}) {
      if (k == CollKind::Send && N != 2) continue;  // one pair: the model prices one link
      for (Chunking ch : {Chunking{1, 16}, Chunking{2, 64}, Chunking{1, 1 << 20}}) {
        for (size_t count : {size_t{1}, size_t{1000}}) {
          Case c;
          c.kind = k;
          c.algo = a;
          c.nranks = N;
          c.root = N - 1;
          c.count = count;
          c.chunking = ch;
          INFO(coll::simtest::describe(c));
          const auto o = runCase(c);
          REQUIRE(o.failures.empty());
          size_t bytes = count * 4;
          if (k == CollKind::AllGather || k == CollKind::ReduceScatter) bytes *= static_cast<size_t>(N);
          const CostTerms t = costTerms(k, a, N, bytes, ch, 4);
          CHECK(t.totalBytes == Approx(static_cast<double>(o.totalElemsSent * 4)).epsilon(1e-12));
          // The busiest rank sends at most what all of them do.
          CHECK(static_cast<double>(o.maxElemsSentByRank * 4) <= t.totalBytes + 1e-9);
        }
      }
    }
  }
}
