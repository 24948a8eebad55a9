// tuner_test.cc — the tuner follows its cost model and its overrides; where
// ranks share cores or hosts (small calls' algorithms: tuner_small_calls_test.cc).
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

TEST_CASE("the tuner's choice is the cheapest predicted algorithm", "[tuner]") {
  unsetenv("COLL_ALGO");
  auto t = Tuner::create(inputs(4));
  REQUIRE(t.isOk());
  for (size_t count : {size_t{1}, size_t{1000}, size_t{1} << 20, size_t{1} << 26}) {
    auto d = t.value().choose(CollKind::AllReduce, count, 4);
    for (Algo a : {Algo::Ring, Algo::Tree, Algo::OneShot, Algo::Doubling}) {
      double other = coll::sched::predictSeconds(CollKind::AllReduce, a, 4, count * 4, inputs(4).cost, d.chunking);
      INFO("count " << count << " chose " << coll::sched::algoName(d.algo) << " vs " << coll::sched::algoName(a));
      CHECK(d.predictedSeconds <= other * 1.0000001 + 1e-12);
    }
    CHECK(d.chunking.chunkElems * 4 <= (256u << 10));
    CHECK(d.chunking.nchannels >= 1);
    CHECK(d.chunking.nchannels <= 2);
  }
}

TEST_CASE("COLL_ALGO forces the algorithm; COLL_NCHANNELS the channels", "[tuner]") {
  setenv("COLL_ALGO", "allreduce:tree", 1);
  setenv("COLL_NCHANNELS", "1", 1);
  auto t = Tuner::create(inputs(4));
  unsetenv("COLL_ALGO");
  unsetenv("COLL_NCHANNELS");
  REQUIRE(t.isOk());
  auto d = t.value().choose(CollKind::AllReduce, 1 << 20, 4);
  CHECK(d.algo == Algo::Tree);
  CHECK(d.forced);
  CHECK(d.chunking.nchannels == 1);
}

TEST_CASE("bad tuning variables are errors", "[tuner]") {
  setenv("COLL_NCHANNELS", "9", 1);  // more than the transport was connected with
  CHECK_FALSE(Tuner::create(inputs(2)).isOk());
  unsetenv("COLL_NCHANNELS");
  setenv("COLL_PROTO", "LL128", 1);
  auto t = Tuner::create(inputs(2));
  unsetenv("COLL_PROTO");
  REQUIRE_FALSE(t.isOk());
  CHECK(t.status().message().find("LL128") != std::string::npos);
}

TEST_CASE("a decision's terms are its price: hops*alpha + extraMessages*overhead + byteTerm*beta == predictSeconds",
          "[tuner]") {
  unsetenv("COLL_ALGO");
  TunerInputs in = inputs(4);
  in.cost.overhead = 0.2e-6;  // one-shot's extra messages priced too
  auto t = Tuner::create(in);
  REQUIRE(t.isOk());
  const auto cost = in.cost;
  for (CollKind k : {CollKind::AllReduce, CollKind::AllGather, CollKind::ReduceScatter, CollKind::Broadcast,
                     CollKind::Send}) {
    for (size_t elem : {size_t{1}, size_t{4}, size_t{8}}) {
      for (size_t count : {size_t{1}, size_t{1000}, size_t{1} << 22}) {
        auto d = t.value().choose(k, count, elem);
        size_t bytes = coll::tune::collBytes(k, count, elem, 4);
        double expect = coll::sched::predictSeconds(k, d.algo, 4, bytes, cost, d.chunking, elem);
        INFO(coll::sched::collKindName(k) << " count " << count << " elem " << elem);
        CHECK(d.predictedSeconds == Approx(expect).epsilon(1e-12));
        CHECK(d.predictedSeconds == Approx(d.terms.hops * cost.alpha + d.terms.extraMessages * cost.overhead +
                                           d.terms.byteTerm * cost.beta)
                                        .epsilon(1e-12));
        CHECK(d.terms.hops > 0);
        CHECK(d.terms.byteTerm > 0);
      }
    }
  }
}

TEST_CASE("ranks sharing CPUs on shm: a handoff per hop and all ranks' bytes over the CPUs", "[tuner]") {
  unsetenv("COLL_ALGO");
  auto shmInputs = [](int n, int sharedCpus) {
    TunerInputs in = inputs(n);
    in.cost = {0.4e-6, 1.0 / 10e9};  // shm's stated alpha and beta
    in.sharedCpus = sharedCpus;
    in.handoff = sharedCpus > 0 ? 1.5e-6 : 0;
    return in;
  };
  for (int n : {3, 4, 8}) {
    INFO("n " << n);
    auto own = Tuner::create(shmInputs(n, 0));  // a core per rank
    auto shared = Tuner::create(shmInputs(n, 2));
    REQUIRE(own.isOk());
    REQUIRE(shared.isOk());
    // The price: every hop carries the handoff, and the byte term is at
    // least all ranks' bytes over the 2 CPUs.
    for (CollKind k : {CollKind::AllReduce, CollKind::AllGather, CollKind::Broadcast, CollKind::Reduce,
                       CollKind::ReduceScatter}) {
      for (size_t count : {size_t{16}, size_t{16} << 10, size_t{4} << 20}) {
        INFO(coll::sched::collKindName(k) << " count " << count);
        auto d = shared.value().choose(k, count, 4);
        const auto pure = coll::sched::costTerms(k, d.algo, n, coll::tune::collBytes(k, count, 4, n), d.chunking, 4);
        CHECK(d.terms.byteTerm == Approx(std::max(pure.byteTerm, pure.totalBytes / 2)).epsilon(1e-12));
        CHECK(d.terms.hops == pure.hops);
        CHECK(d.predictedSeconds == Approx(d.terms.hops * (0.4e-6 + 1.5e-6) + d.terms.byteTerm / 10e9).epsilon(1e-12));
        auto o = own.value().choose(k, count, 4);
        const auto ownPure = coll::sched::costTerms(k, o.algo, n, coll::tune::collBytes(k, count, 4, n), o.chunking, 4);
        CHECK(o.terms.byteTerm == ownPure.byteTerm);
      }
    }
    // Large calls are bytes, not hops: the same choice either way.
    for (CollKind k : {CollKind::AllReduce, CollKind::Broadcast, CollKind::AllGather}) {
      auto a = own.value().choose(k, 4 << 20, 4);
      auto b = shared.value().choose(k, 4 << 20, 4);
      CHECK(a.algo == b.algo);
      CHECK(a.chunking.chunkElems == b.chunking.chunkElems);
      CHECK(a.chunking.nchannels == b.chunking.nchannels);
    }
    // No tree all-reduce where a handoff is priced, forced aside.
    for (size_t count : {size_t{256}, size_t{16} << 10, size_t{1} << 20, size_t{16} << 20})
      CHECK(shared.value().choose(CollKind::AllReduce, count, 4).algo != Algo::Tree);
    CHECK(forcedTuner("allreduce:tree", shmInputs(n, 2)).choose(CollKind::AllReduce, 16 << 10, 4).algo == Algo::Tree);
  }
  // Mid-size calls move to fewer hops (measured 1.3-2.5x): a 64 KiB
  // broadcast from the chain to the tree, a 32 KiB all-reduce from the ring
  // (N = 4) or the tree (N = 8) to doubling.
  struct Move {
    int n;
    CollKind k;
    size_t count;
    Algo own, shared;
  };
  for (const Move& m : {Move{4, CollKind::Broadcast, 16 << 10, Algo::Pipeline, Algo::Tree},
                        Move{8, CollKind::Broadcast, 16 << 10, Algo::Pipeline, Algo::Tree},
                        Move{4, CollKind::AllReduce, 8 << 10, Algo::Ring, Algo::Doubling},
                        Move{8, CollKind::AllReduce, 8 << 10, Algo::Tree, Algo::Doubling}}) {
    INFO("n " << m.n << " " << coll::sched::collKindName(m.k) << " count " << m.count);
    auto own = Tuner::create(shmInputs(m.n, 0));
    auto shared = Tuner::create(shmInputs(m.n, 2));
    REQUIRE(own.isOk());
    REQUIRE(shared.isOk());
    CHECK(own.value().choose(m.k, m.count, 4).algo == m.own);
    CHECK(shared.value().choose(m.k, m.count, 4).algo == m.shared);
  }
  // The floor: at N = 3 a 64 KiB one-shot all-reduce is 1 hop, but its 6 S
  // of copies share 2 CPUs; priced by hops alone one-shot wins, with the
  // floor the ring (measured 1.2x one-shot).
  TunerInputs hopsOnly = shmInputs(3, 2);
  hopsOnly.sharedCpus = 0;
  auto h = Tuner::create(hopsOnly);
  auto f = Tuner::create(shmInputs(3, 2));
  REQUIRE(h.isOk());
  REQUIRE(f.isOk());
  CHECK(h.value().choose(CollKind::AllReduce, 16 << 10, 4).algo == Algo::OneShot);
  CHECK(f.value().choose(CollKind::AllReduce, 16 << 10, 4).algo == Algo::Ring);
}

TEST_CASE("ranks sharing cores over loopback TCP: the tree broadcast where it saves a third of the chain's hops, "
          "the tree all-reduce from 16 MiB and 6 ranks",
          "[tuner]") {
  unsetenv("COLL_ALGO");
  auto socketInputs = [](int n) {
    TunerInputs in = inputs(n);
    in.cost = {6e-6, 1.0 / 2e9, 3e-6};  // loopback TCP's stated cost
    in.transport = "socket";
    in.sharedCpus = 2;
    return in;
  };
  const size_t oneMiB = (1 << 20) / 4, eightMiB = (8 << 20) / 4, sixteenMiB = (16 << 20) / 4;
  for (int n : {4, 6, 7, 8, 9, 16}) {
    INFO("n " << n);
    auto t = Tuner::create(socketInputs(n));
    REQUIRE(t.isOk());
    CHECK(t.value().choose(CollKind::Broadcast, oneMiB, 4).algo == Algo::Tree);
    CHECK(t.value().choose(CollKind::Broadcast, eightMiB, 4).algo == Algo::Tree);
    CHECK(t.value().choose(CollKind::Broadcast, sixteenMiB, 4).algo == Algo::Pipeline);  // past the cap
    CHECK(t.value().choose(CollKind::Broadcast, 64, 4).algo == Algo::Tree);               // the model's pick anyway
    // Without any one of the conditions the model's choice stands: the
    // chain up to N = 9 (from 16 ranks the model itself prices the tree
    // lower at 1 MiB; across hosts the tree broadcast is never a candidate).
    TunerInputs own = socketInputs(n);
    own.sharedCpus = 0;
    TunerInputs remote = socketInputs(n);
    remote.allLocal = false;
    TunerInputs shm = socketInputs(n);
    shm.transport = "shm";
    auto model = Tuner::create(own);
    REQUIRE(model.isOk());
    const Algo modelPick = model.value().choose(CollKind::Broadcast, oneMiB, 4).algo;
    if (n <= 9) CHECK(modelPick == Algo::Pipeline);
    auto shmTuner = Tuner::create(shm);
    REQUIRE(shmTuner.isOk());
    CHECK(shmTuner.value().choose(CollKind::Broadcast, oneMiB, 4).algo == modelPick);
    auto remoteTuner = Tuner::create(remote);
    REQUIRE(remoteTuner.isOk());
    CHECK(remoteTuner.value().choose(CollKind::Broadcast, oneMiB, 4).algo == Algo::Pipeline);
    // Forcing still forces.
    CHECK(forcedTuner("broadcast:pipeline", socketInputs(n)).choose(CollKind::Broadcast, oneMiB, 4).algo ==
          Algo::Pipeline);
  }
  // N = 3 (depth 2 = the chain's 2 hops) and N = 5 (3 of 4): the chain.
  for (int n : {3, 5}) {
    INFO("n " << n);
    auto t = Tuner::create(socketInputs(n));
    REQUIRE(t.isOk());
    CHECK(t.value().choose(CollKind::Broadcast, oneMiB, 4).algo == Algo::Pipeline);
  }
  // All-reduces from 16 MiB and 6 ranks on: the tree, not the ring.
  const size_t fourMiB = (4 << 20) / 4, sixtyFourMiB = (64 << 20) / 4;
  for (int n : {3, 4, 5, 6, 7, 8, 9}) {
    INFO("n " << n);
    auto t = Tuner::create(socketInputs(n));
    REQUIRE(t.isOk());
    const Algo large = n >= 6 ? Algo::Tree : Algo::Ring;
    CHECK(t.value().choose(CollKind::AllReduce, sixteenMiB, 4).algo == large);
    CHECK(t.value().choose(CollKind::AllReduce, sixtyFourMiB, 4).algo == large);
    CHECK(t.value().choose(CollKind::AllReduce, fourMiB, 4).algo == Algo::Ring);  // below the floor
    TunerInputs own = socketInputs(n);
    own.sharedCpus = 0;
    TunerInputs shm = socketInputs(n);
    shm.transport = "shm";
    for (const TunerInputs& other : {own, shm}) {
      auto u = Tuner::create(other);
      REQUIRE(u.isOk());
      CHECK(u.value().choose(CollKind::AllReduce, sixteenMiB, 4).algo == Algo::Ring);
    }
  }
}

TEST_CASE("across hosts over TCP one channel, but the double tree's two; on one host all of them", "[tuner]") {
  unsetenv("COLL_ALGO");
  unsetenv("COLL_NCHANNELS");
  auto socketInputs = [](int n, const char* transport, bool allLocal) {
    TunerInputs in = inputs(n);
    in.cost = {15e-6, 1.0 / 1.2e9, 3e-6};  // TCP's stated cost
    in.transport = transport;
    in.allLocal = allLocal;
    return in;
  };
  const std::vector<std::pair<CollKind, size_t>> large = {{CollKind::AllReduce, (64u << 20) / 4},
                                                          {CollKind::AllGather, (16u << 20) / 4},
                                                          {CollKind::ReduceScatter, (16u << 20) / 4},
                                                          {CollKind::Broadcast, (64u << 20) / 4},
                                                          {CollKind::Reduce, (64u << 20) / 4}};
  for (int n : {2, 4, 8}) {
    for (const char* transport : {"socket", "shm+socket"}) {
      INFO("n " << n << " " << transport);
      auto across = Tuner::create(socketInputs(n, transport, false));
      auto local = Tuner::create(socketInputs(n, transport, true));
      REQUIRE(across.isOk());
      REQUIRE(local.isOk());
      for (auto [k, count] : large) {
        INFO(coll::sched::collKindName(k));
        const auto a = across.value().choose(k, count, 4);
        if (a.algo == Algo::Tree && k == CollKind::AllReduce)
          CHECK(a.chunking.nchannels == 2);
        else
          CHECK(a.chunking.nchannels == 1);
        CHECK(local.value().choose(k, count, 4).chunking.nchannels == 2);
      }
      // The tree all-reduce keeps its two trees across hosts.
      TunerInputs in = socketInputs(n, transport, false);
      CHECK(forcedTuner("allreduce:tree", in).choose(CollKind::AllReduce, (64u << 20) / 4, 4).chunking.nchannels == 2);
      CHECK(forcedTuner("allreduce:ring", in).choose(CollKind::AllReduce, (64u << 20) / 4, 4).chunking.nchannels == 1);
    }
  }
  // Across hosts over shm alone cannot happen; a transport without sockets
  // keeps its channels.
  auto shm = Tuner::create(socketInputs(4, "shm", false));
  REQUIRE(shm.isOk());
  CHECK(shm.value().choose(CollKind::AllReduce, (64u << 20) / 4, 4).chunking.nchannels == 2);
  // COLL_NCHANNELS still forces the count (a NIC that one TCP flow cannot fill).
  setenv("COLL_NCHANNELS", "2", 1);
  auto forced = Tuner::create(socketInputs(4, "socket", false));
  unsetenv("COLL_NCHANNELS");
  REQUIRE(forced.isOk());
  CHECK(forced.value().choose(CollKind::AllReduce, (64u << 20) / 4, 4).chunking.nchannels == 2);
  CHECK(forced.value().choose(CollKind::Broadcast, (64u << 20) / 4, 4).chunking.nchannels == 2);
}

TEST_CASE("no chunk below alpha/beta: a small pipelined call is not cut into messages that cost more than they carry",
          "[tuner]") {
  using coll::tune::minChunkBytes;
  CHECK(minChunkBytes({0.4e-6, 1.0 / 10e9}) == 4096);    // shm: 4000 B
  CHECK(minChunkBytes({6e-6, 1.0 / 2e9}) == 16384);      // TCP on loopback: 12000 B
  CHECK(minChunkBytes({15e-6, 1.0 / 1.2e9}) == 32768);   // a NIC: 18000 B
  CHECK(minChunkBytes({1e-6, 0}) == 4096);
  unsetenv("COLL_ALGO");
  TunerInputs in = inputs(2);
  in.cost = {6e-6, 1.0 / 2e9};
  auto t = Tuner::create(in);
  REQUIRE(t.isOk());
  // 16 KiB broadcast between two ranks over TCP: one message, not four of 4 KiB.
  auto d = t.value().choose(CollKind::Broadcast, 4096, 4);
  CHECK(d.terms.chunks == 1);
  // 1 MiB still cut for the pipeline, in chunks of at least 16 KiB.
  d = t.value().choose(CollKind::Broadcast, 1 << 18, 4);
  CHECK(d.terms.chunks > 1);
  CHECK(d.chunking.chunkElems * 4 >= 16384);
}
