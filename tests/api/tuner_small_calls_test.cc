// tuner_small_calls_test.cc — the latency algorithms the tuner takes for
// small calls: one-shot, recursive doubling and halving, the tree broadcast.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdlib>
#include <utility>
#include <vector>

#include "tuner/tuner.h"
#include "tuner_inputs.h"

using coll::sched::Algo;
using coll::sched::CollKind;
using coll::tune::Tuner;
using coll::tune::TunerInputs;
using colltest::forcedTuner;
using colltest::inputs;
using sched_cost = coll::sched::LinkCost;

TEST_CASE("one-shot all-gather: small calls on one host, three ranks or more; one-shot broadcast: forced only",
          "[tuner]") {
  unsetenv("COLL_ALGO");
  for (bool allLocal : {true, false}) {
    INFO("allLocal " << allLocal);
    TunerInputs in4 = inputs(4);
    in4.allLocal = allLocal;
    auto t4 = Tuner::create(in4);
    auto t2 = Tuner::create(inputs(2));
    REQUIRE(t4.isOk());
    REQUIRE(t2.isOk());
    CHECK((t4.value().choose(CollKind::AllGather, 256, 4).algo == Algo::OneShot) == allLocal);
    CHECK(t4.value().choose(CollKind::Broadcast, 256, 4).algo == (allLocal ? Algo::Tree : Algo::Pipeline));
    // A rank's part over one chunk: the ring pipelines it.
    CHECK(t4.value().choose(CollKind::AllGather, 1 << 20, 4).algo == Algo::Ring);
    // Two ranks: one-shot is the ring step for step.
    CHECK(t2.value().choose(CollKind::AllGather, 256, 4).algo == Algo::Ring);
    // One-shot all-reduce stays on one host too.
    CHECK((t4.value().choose(CollKind::AllReduce, 2, 4).algo == Algo::OneShot) == allLocal);
  }
  auto d = forcedTuner("broadcast:oneshot", inputs(4)).choose(CollKind::Broadcast, 256, 4);
  CHECK(d.algo == Algo::OneShot);
  CHECK(d.predictedSeconds == Approx(0.5e-6 + 3 * 1024 / 10e9));
}

TEST_CASE("small reduce-scatters: one-shot or recursive halving, up to four times alpha/beta bytes", "[tuner]") {
  unsetenv("COLL_ALGO");
  // count is the per-rank receive count; the call's S is N * count * 4.
  auto pick = [](int n, sched_cost cost, bool allLocal, size_t count) {
    TunerInputs in = inputs(n);
    in.cost = cost;
    in.allLocal = allLocal;
    auto t = Tuner::create(in);
    REQUIRE(t.isOk());
    return t.value().choose(CollKind::ReduceScatter, count, 4).algo;
  };
  const sched_cost loopback{6e-6, 1.0 / 2.0e9, 3e-6}, nic{15e-6, 1.0 / 1.2e9, 3e-6}, shm{0.4e-6, 1.0 / 10e9, 0};
  // Loopback TCP: alpha/beta rounds up to 16 KiB, so up to S = 64 KiB.
  // A power of two: halving's log2 N hops cost less than one-shot's N-1
  // messages; its fold's two hops more at N = 3.
  CHECK(pick(3, loopback, true, 16) == Algo::OneShot);
  CHECK(pick(3, nic, false, 16) == Algo::Ring);
  for (int n : {4, 8}) {
    INFO("n " << n);
    const Algo small = Algo::Halving;
    const size_t perRank64K = (64u << 10) / 4 / static_cast<size_t>(n);
    CHECK(pick(n, loopback, true, 16) == small);
    CHECK(pick(n, loopback, true, perRank64K) == small);
    CHECK(pick(n, loopback, true, 2 * perRank64K) == Algo::Ring);
    CHECK(pick(n, loopback, true, 1 << 20) == Algo::Ring);
    // shm: 4 KiB, so up to S = 16 KiB; a message costs no more than its
    // alpha, so one-shot's one hop wins.
    CHECK(pick(n, shm, true, 16) == Algo::OneShot);
    CHECK(pick(n, shm, true, perRank64K / 4) == Algo::OneShot);
    CHECK(pick(n, shm, true, perRank64K / 2) == Algo::Ring);
    // Across hosts one-shot never (N-1 senders into one host at once);
    // halving, one partner per round, where its hops are fewer (the NIC's
    // alpha/beta is 32 KiB: up to S = 128 KiB).
    const size_t perRank128K = (128u << 10) / 4 / static_cast<size_t>(n);
    CHECK(pick(n, nic, false, 16) == Algo::Halving);
    CHECK(pick(n, nic, false, 2 * perRank128K) == Algo::Ring);
  }
  // Two ranks: one message either way; the ring keeps it.
  CHECK(pick(2, loopback, true, 16) == Algo::Ring);
  // Halving only while the call is one chunk on one channel.
  {
    TunerInputs in = inputs(8);
    in.cost = loopback;
    in.slotPayloadBytes = 4 << 10;  // S = 64 KiB: 8 KiB per rank in chunks of 4 KiB at most
    auto t = Tuner::create(in);
    REQUIRE(t.isOk());
    const auto d = t.value().choose(CollKind::ReduceScatter, 2048, 4);
    CHECK((d.terms.chunks > 1 || d.chunking.nchannels > 1));
    CHECK(d.algo != Algo::Halving);
  }
  CHECK(forcedTuner("reducescatter:halving", inputs(4)).choose(CollKind::ReduceScatter, 1 << 20, 4).algo ==
        Algo::Halving);
  // Its chunk holds all N blocks, so a round goes as one message: S = 64 KiB
  // at N = 8 is 8 KiB per rank, 32 KiB in the first round (alpha/beta is 16
  // KiB); the slot (256 KiB) bounds it.
  {
    TunerInputs in = inputs(8);
    in.cost = loopback;
    auto t = Tuner::create(in);
    REQUIRE(t.isOk());
    const auto d = t.value().choose(CollKind::ReduceScatter, 2048, 4);
    CHECK(d.algo == Algo::Halving);
    CHECK(d.chunking.chunkElems == 8 * 2048);
    const auto g = t.value().choose(CollKind::AllGather, 2048, 4);
    CHECK(g.algo == Algo::Doubling);
    CHECK(g.chunking.chunkElems == 8 * 2048);
    in.slotPayloadBytes = 32 << 10;
    auto small = Tuner::create(in);
    REQUIRE(small.isOk());
    CHECK(small.value().choose(CollKind::ReduceScatter, 2048, 4).chunking.chunkElems == 8192);
  }
  // Forced, at any size.
  CHECK(forcedTuner("reducescatter:oneshot", inputs(4)).choose(CollKind::ReduceScatter, 1 << 20, 4).algo ==
        Algo::OneShot);
}

TEST_CASE("recursive doubling: where one-shot's extra messages cost more than its hop saves", "[tuner]") {
  unsetenv("COLL_ALGO");
  auto pick = [](int n, sched_cost cost, bool allLocal, CollKind k, size_t count) {
    TunerInputs in = inputs(n);
    in.cost = cost;
    in.allLocal = allLocal;
    auto t = Tuner::create(in);
    REQUIRE(t.isOk());
    return t.value().choose(k, count, 4).algo;
  };
  // The socket transport's stated cost on loopback and on a NIC.
  const sched_cost loopback{6e-6, 1.0 / 2.0e9, 3e-6}, nic{15e-6, 1.0 / 1.2e9, 3e-6};
  for (CollKind k : {CollKind::AllReduce, CollKind::AllGather}) {
    INFO(coll::sched::collKindName(k));
    // Two ranks: doubling is one-shot (and the all-gather ring) step for
    // step, and those come first.
    CHECK(pick(2, loopback, true, k, 16) != Algo::Doubling);
    // Three: one hop with two extra messages beats doubling's fold (3
    // hops), and ties the all-gather ring (one-shot comes first).
    CHECK(pick(3, loopback, true, k, 16) == Algo::OneShot);
    CHECK(pick(3, loopback, true, k, 1024) == Algo::OneShot);
    // Four and more: log2 N hops (+2 for the fold) beat one hop with 2(N-2)
    // extra messages; at N = 5 the two tie and doubling comes first.  The
    // tree all-reduce is not considered for one chunk per channel.  (The
    // all-gather's fold sends the whole Output back, S more bytes, so the
    // model keeps one-shot all-gathers at N = 5 and 6.)
    const auto ns = k == CollKind::AllReduce ? std::vector<int>{4, 5, 6, 7, 8, 16} : std::vector<int>{4, 7, 8, 16};
    for (int n : ns) {
      INFO("n " << n);
      CHECK(pick(n, loopback, true, k, 16) == Algo::Doubling);
      CHECK(pick(n, loopback, true, k, 512) == Algo::Doubling);
    }
    CHECK(pick(4, loopback, true, k, 4096) == Algo::Doubling);
    // Large: the ring.
    CHECK(pick(4, loopback, true, k, 4 << 20) == Algo::Ring);
    // Across hosts: small calls only (below the link's alpha/beta size).
    CHECK(pick(4, nic, false, k, 16) == Algo::Doubling);
    CHECK(pick(4, nic, false, k, 64 << 10) != Algo::Doubling);
  }
  // All-gathers above four times alpha/beta bytes (64 KiB on loopback) go
  // back to one-shot; all-reduces follow the model.
  CHECK(pick(8, loopback, true, CollKind::AllGather, 2048) == Algo::Doubling);  // 64 KiB
  CHECK(pick(8, loopback, true, CollKind::AllGather, 4096) == Algo::OneShot);   // 128 KiB
  CHECK(pick(4, loopback, true, CollKind::AllReduce, 8 << 10) == Algo::Doubling);  // 32 KiB
  // Shared memory (no per-message overhead): one-shot all-gathers stay;
  // all-reduces move to doubling once one-shot's N-1 copies of S cost more
  // than a hop.
  const sched_cost shm{0.4e-6, 1.0 / 10e9, 0};
  CHECK(pick(4, shm, true, CollKind::AllGather, 256) == Algo::OneShot);
  CHECK(pick(4, shm, true, CollKind::AllReduce, 16) == Algo::OneShot);
  CHECK(pick(4, shm, true, CollKind::AllReduce, 4096) == Algo::Doubling);
  // The halving all-reduce only when forced.
  for (int n : {4, 8})
    for (size_t count : {size_t{16}, size_t{16} << 10, size_t{1} << 20})
      CHECK(pick(n, loopback, true, CollKind::AllReduce, count) != Algo::Halving);
  CHECK(forcedTuner("allreduce:halving", inputs(8)).choose(CollKind::AllReduce, 1 << 20, 4).algo == Algo::Halving);
  // Forced, it is used at any size.
  CHECK(forcedTuner("allgather:doubling", inputs(4)).choose(CollKind::AllGather, 1 << 20, 4).algo == Algo::Doubling);
}

TEST_CASE("tree broadcast: small calls from four ranks on, on one host only, in one piece", "[tuner]") {
  unsetenv("COLL_ALGO");
  for (bool allLocal : {true, false}) {
    INFO("allLocal " << allLocal);
    for (int n : {4, 8, 16}) {
      INFO("n " << n);
      TunerInputs in = inputs(n);
      in.allLocal = allLocal;
      auto t = Tuner::create(in);
      REQUIRE(t.isOk());
      auto d = t.value().choose(CollKind::Broadcast, 256, 4);
      CHECK((d.algo == Algo::Tree) == allLocal);
      CHECK(d.chunking.nchannels == 1);
      CHECK(d.terms.chunks == 1);
      // Large: the chain, which carries one copy per link.
      CHECK(t.value().choose(CollKind::Broadcast, 16 << 20, 4).algo == Algo::Pipeline);
    }
  }
  // Across hosts on request: COLL_ALGO=broadcast:tree.
  TunerInputs remote = inputs(8);
  remote.allLocal = false;
  CHECK(forcedTuner("broadcast:tree", remote).choose(CollKind::Broadcast, 256, 4).algo == Algo::Tree);
  // Two and three ranks: the tree's hops are the chain's, and ties go to the chain.
  for (int n : {2, 3}) {
    auto t = Tuner::create(inputs(n));
    REQUIRE(t.isOk());
    CHECK(t.value().choose(CollKind::Broadcast, 256, 4).algo == Algo::Pipeline);
  }
  // A tree all-reduce still gets its two channels and its pipeline.
  TunerInputs in = inputs(8);
  in.allLocal = false;
  auto d = forcedTuner("allreduce:tree", in).choose(CollKind::AllReduce, 1 << 18, 4);
  CHECK(d.chunking.nchannels == 2);
  CHECK(d.terms.chunks == 4);
}
