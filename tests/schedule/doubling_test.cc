// doubling_test.cc — the recursive-doubling rank layout (doubling_shape.h)
// and what the doubling schedules promise beyond correctness (which the
// algorithms grids check): log2 P messages per rank, one per round, and
// the critical path the cost model prices.
#include <catch2/catch.hpp>

#include <set>
#include <vector>

#include "harness.h"
#include "schedule/cost.h"
#include "schedule/doubling_shape.h"

using namespace coll::sched;
using coll::simtest::Case;
using coll::simtest::runCase;

TEST_CASE("doubling shape: folded pairs, virtual ranks, contiguous blocks", "[doubling]") {
  for (int N = 1; N <= 300; N += (N < 70 ? 1 : 29)) {
    INFO("N=" << N);
    const DoublingShape s(N);
    REQUIRE(s.P <= N);
    REQUIRE(N < 2 * s.P);
    REQUIRE((s.P & (s.P - 1)) == 0);
    CHECK(s.rem == N - s.P);
    CHECK((1 << s.rounds()) == s.P);
    CHECK(s.hops() == s.rounds() + (s.rem > 0 ? 2 : 0));
    std::set<int> virtuals;
    for (int r = 0; r < N; ++r) {
      INFO("rank " << r);
      CHECK_FALSE((s.foldedOut(r) && s.foldsIn(r)));
      if (s.foldedOut(r)) {
        CHECK(s.foldsIn(r + 1));  // its partner takes its data
        continue;
      }
      const int v = s.virtualOf(r);
      REQUIRE(v >= 0);
      REQUIRE(v < s.P);
      CHECK(s.rankOf(v) == r);
      virtuals.insert(v);
      // The rank's own block, and its folded partner's, are its virtual
      // rank's blocks.
      CHECK(s.blockLo(v) <= r);
      CHECK(r < s.blockLo(v + 1));
      if (s.foldsIn(r)) CHECK(s.blockLo(v) == r - 1);
    }
    CHECK(static_cast<int>(virtuals.size()) == s.P);
    CHECK(s.blockLo(0) == 0);
    CHECK(s.blockLo(s.P) == N);
    for (int v = 0; v < s.P; ++v) CHECK(s.blockLo(v + 1) - s.blockLo(v) == (v < s.rem ? 2 : 1));
  }
}

namespace {

// Messages one rank sends in one call (steps that send).
size_t sends(const Schedule& s) {
  size_t n = 0;
  for (const auto& ch : s.channels)
    for (const Step& st : ch.steps) n += stepSends(st.kind) ? 1 : 0;
  return n;
}

// One chunk on one channel, one FIFO slot per link.
Case oneChunkCase(CollKind k, Algo a, int N, size_t count) {
  Case c;
  c.kind = k;
  c.algo = a;
  c.nranks = N;
  c.count = count;
  c.chunking = {1, 1 << 20};
  c.fifoDepth = 1;
  return c;
}

}  // namespace

TEST_CASE("doubling: log2 P messages per rank for one chunk, against N-1 for one-shot", "[doubling]") {
  for (int N = 2; N <= 33; ++N) {
    const DoublingShape shape(N);
    for (CollKind k : {CollKind::AllReduce, CollKind::AllGather}) {
      INFO("N=" << N << " " << collKindName(k));
      for (int r = 0; r < N; ++r) {
        INFO("rank " << r);
        const Schedule s = buildSchedule(k, Algo::Doubling, r, N, 0, 100, {1, 1 << 20});
        const size_t want = shape.foldedOut(r) ? 1 : static_cast<size_t>(shape.rounds()) + (shape.foldsIn(r) ? 1 : 0);
        CHECK(sends(s) == want);
        if (N >= 4) CHECK(sends(s) < sends(buildSchedule(k, Algo::OneShot, r, N, 0, 100, {1, 1 << 20})));
      }
    }
  }
  // N = 4, rank 1, all-gather of 8 per rank: round 0 swaps block 1 for
  // block 0 with rank 0; round 1 blocks 0-1 for blocks 2-3 with rank 3.
  const auto st = doublingAllGather(1, 4, 8, {1, 1 << 20}).channels[0].steps;
  REQUIRE(st.size() == 5);
  CHECK(st[0].kind == StepKind::Send);
  CHECK(st[0].sendPeer == 0);
  CHECK(st[0].src == Buf::Input);
  CHECK(st[1].kind == StepKind::Copy);
  CHECK(st[1].dstOff == 8);
  CHECK(st[2].kind == StepKind::Recv);
  CHECK(st[2].recvPeer == 0);
  CHECK(st[2].dstOff == 0);
  CHECK(st[3].kind == StepKind::Send);
  CHECK(st[3].sendPeer == 3);
  CHECK(st[3].srcOff == 0);
  CHECK(st[3].count == 16);
  CHECK(st[4].kind == StepKind::Recv);
  CHECK(st[4].dstOff == 16);
  CHECK(st[4].count == 16);
  // Rank 3's all-reduce: x3 swapped with rank 2, then with rank 1; the last
  // combine is final.
  const auto ar = doublingAllReduce(3, 4, 10, {1, 1 << 20}).channels[0].steps;
  REQUIRE(ar.size() == 4);
  CHECK(ar[0].sendPeer == 2);
  CHECK(ar[0].src == Buf::Input);
  CHECK(ar[1].kind == StepKind::RecvReduceCopy);
  CHECK_FALSE(ar[1].final);
  CHECK(ar[2].sendPeer == 1);
  CHECK(ar[2].src == Buf::Output);
  CHECK(ar[3].final);
}

TEST_CASE("doubling all-gather: a range that does not fit a chunk goes in whole blocks", "[doubling]") {
  // N = 8, 16 elements per rank, chunks of 32: round 2 moves 4 blocks (64
  // elements) as two steps of 2 blocks each way; both sides cut alike
  // (the algorithms grids check every cut end to end).
  const auto st = doublingAllGather(0, 8, 16, {1, 32}).channels[0].steps;
  size_t biggest = 0;
  for (const Step& s : st) {
    CHECK(s.count <= 32);
    CHECK(s.count % 16 == 0);
    biggest = std::max(biggest, s.count);
  }
  CHECK(biggest == 32);
  CHECK(sends(doublingAllGather(0, 8, 16, {1, 32})) == 1 + 1 + 2);
}

TEST_CASE("doubling: the model's hops are the simulated critical path", "[doubling][cost]") {
  for (int N = 2; N <= 17; ++N)
    for (CollKind k : {CollKind::AllReduce, CollKind::AllGather}) {
      INFO("N=" << N << " " << collKindName(k));
      const Case c = oneChunkCase(k, Algo::Doubling, N, 64);
      const auto o = runCase(c);
      REQUIRE(o.failures.empty());
      const size_t bytes = 64 * 4 * (k == CollKind::AllGather ? static_cast<size_t>(N) : 1);
      const CostTerms t = costTerms(k, Algo::Doubling, N, bytes, c.chunking, 4);
      const DoublingShape shape(N);
      CHECK(t.hops == shape.hops());
      // Each hop is a send and a receive step; the all-gather's first round
      // of a rank with one block also copies it, between the two, unless a
      // fold's step is on the path.
      const size_t extra = k == CollKind::AllGather && shape.rem == 0 ? 1 : 0;
      CHECK(o.rounds == 2 * static_cast<size_t>(t.hops) + extra);
      // Bytes: the busiest rank's sends bound the byte term from below.
      CHECK(static_cast<double>(o.maxElemsSentByRank * 4) <= t.byteTerm + 1e-9);
    }
}

TEST_CASE("halving all-reduce: 2 log2 P messages per rank, the ring's bytes, the model's critical path",
          "[doubling][cost]") {
  for (int N = 2; N <= 17; ++N) {
    INFO("N=" << N);
    const DoublingShape shape(N);
    // Messages: log2 P to halve and log2 P to gather back, plus the fold.
    for (int r = 0; r < N; ++r) {
      const Schedule s = halvingAllReduce(r, N, 1000, {1, 1 << 20});
      const size_t want = shape.foldedOut(r) ? 1 : 2 * static_cast<size_t>(shape.rounds()) + (shape.foldsIn(r) ? 1 : 0);
      CHECK(sends(s) == want);
    }
    const Case c = oneChunkCase(CollKind::AllReduce, Algo::Halving, N, 1024);
    const auto o = runCase(c);
    REQUIRE(o.failures.empty());
    const CostTerms t = costTerms(CollKind::AllReduce, Algo::Halving, N, 1024 * 4, c.chunking, 4);
    CHECK(t.hops == 2 * shape.rounds() + (shape.rem > 0 ? 2 : 0));
    // Each hop is a send step and a receive step on the critical path.
    CHECK(o.rounds == 2 * static_cast<size_t>(t.hops));
    CHECK(static_cast<double>(o.maxElemsSentByRank * 4) <= t.byteTerm + 1e-9);
    // For N a power of two each rank sends exactly the ring's 2(N-1)/N S.
    if (shape.rem == 0) CHECK(o.maxElemsSentByRank == 2 * 1024 * static_cast<size_t>(N - 1) / static_cast<size_t>(N));
  }
  // Fewer hops than the ring, fewer bytes than doubling (N = 8, 64 KiB).
  const CostTerms h = costTerms(CollKind::AllReduce, Algo::Halving, 8, 65536, {1, 1 << 20}, 4);
  const CostTerms ring = costTerms(CollKind::AllReduce, Algo::Ring, 8, 65536, {1, 1 << 20}, 4);
  const CostTerms dbl = costTerms(CollKind::AllReduce, Algo::Doubling, 8, 65536, {1, 1 << 20}, 4);
  CHECK(h.hops == 6);
  CHECK(h.hops < ring.hops);
  CHECK(h.byteTerm == Approx(ring.byteTerm));
  CHECK(h.byteTerm < dbl.byteTerm);
}
