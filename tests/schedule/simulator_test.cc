// simulator_test.cc — the simulator catches broken schedules: hand-made
// ones with a missing receive, a wrong count, a deadlock, final-rule
// violations, and real schedules run outside their limits.  Each test fails
// if the simulator (or the harness's reference check) stops noticing.
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "harness.h"
#include "simulator.h"

using namespace coll::simtest;
using coll::sched::Algo;
using coll::sched::Buf;
using coll::sched::CollKind;
using coll::sched::Schedule;
using coll::sched::Step;
using coll::sched::StepKind;

namespace {

Schedule one(std::vector<Step> steps) {
  Schedule s;
  s.channels.resize(1);
  s.channels[0].steps = std::move(steps);
  return s;
}

// An all-reduce job on N ranks of `count` elements with the given schedules.
JobSpec allReduceJob(int N, size_t count, std::vector<Schedule> s, bool inPlace = false) {
  JobSpec job = collectiveJob(CollKind::AllReduce, N, 0, count, inPlace);
  job.schedules = std::move(s);
  return job;
}

std::vector<std::vector<double>> inputs(int N, size_t count) {
  std::vector<std::vector<double>> in(static_cast<size_t>(N));
  for (int r = 0; r < N; ++r)
    for (size_t i = 0; i < count; ++i) in[static_cast<size_t>(r)].push_back(r + 0.25 * static_cast<double>(i));
  return in;
}

Step send(int to, size_t n, Buf src = Buf::Input, size_t off = 0) {
  return Step{.kind = StepKind::Send, .src = src, .sendPeer = to, .srcOff = off, .count = n};
}
Step recv(int from, size_t n, size_t off = 0, bool fin = false) {
  return Step{.kind = StepKind::Recv, .dst = Buf::Output, .final = fin, .recvPeer = from,
              .dstOff = off, .count = n};
}
Step rrc(int from, size_t n, bool fin, Buf src = Buf::Input) {
  return Step{.kind = StepKind::RecvReduceCopy, .src = src, .dst = Buf::Output, .final = fin,
              .recvPeer = from, .count = n};
}
Step rrcs(int from, int to, size_t n, bool fin) {
  return Step{.kind = StepKind::RecvReduceCopySend, .src = Buf::Input, .dst = Buf::Output,
              .final = fin, .recvPeer = from, .sendPeer = to, .count = n};
}

// A correct 2-rank all-reduce: 1 sends, 0 reduces (final) and sends back.
std::vector<Schedule> goodPair(size_t n) {
  return {one({rrcs(1, 1, n, true)}), one({send(0, n), recv(0, n)})};
}

}  // namespace

TEST_CASE("a correct hand-made schedule passes", "[simulator]") {
  SimOptions opt;
  opt.preF64 = 3;
  opt.avgF64 = true;
  auto res = simulate<double>(allReduceJob(2, 4, goodPair(4)), inputs(2, 4), opt);
  INFO(res.summary());
  REQUIRE(res.ok());
  // (3*(0+1) + ...)/2 per element, identical on both ranks.
  CHECK(res.outputs[0][0] == 1.5);
  CHECK(res.outputs[1][3] == (3 * (0.75) + 3 * (1.75)) / 2);
  CHECK(res.rounds == 3);
  CHECK(res.messages == 2);
}

TEST_CASE("missing receive: unmatched send and never-written Output", "[simulator]") {
  auto s = goodPair(4);
  s[1] = one({send(0, 4)});  // rank 1 never receives the result
  auto res = simulate<double>(allReduceJob(2, 4, s), inputs(2, 4), {});
  INFO(res.summary());
  CHECK(res.has(ErrorKind::UnmatchedSend));
  CHECK(res.has(ErrorKind::UnwrittenOutput));
  CHECK(res.summary().find("1 message(s) never received") != std::string::npos);
}

TEST_CASE("count mismatch between a send and its receive", "[simulator]") {
  auto s = goodPair(4);
  s[1] = one({send(0, 4), recv(0, 3)});
  auto res = simulate<double>(allReduceJob(2, 4, s), inputs(2, 4), {});
  INFO(res.summary());
  CHECK(res.has(ErrorKind::CountMismatch));
  CHECK(res.summary().find("message of 4 elements") != std::string::npos);
}

TEST_CASE("deadlock: both ranks receive first; the report names ranks and steps",
          "[simulator]") {
  std::vector<Schedule> s = {one({recv(1, 4), send(1, 4, Buf::Output)}),
                             one({recv(0, 4), send(0, 4, Buf::Output)})};
  auto res = simulate<double>(allReduceJob(2, 4, s), inputs(2, 4), {});
  INFO(res.summary());
  REQUIRE(res.has(ErrorKind::Deadlock));
  const std::string m = res.summary();
  CHECK(m.find("rank 0 ch 0 step 0 Recv(from 1") != std::string::npos);
  CHECK(m.find("rank 1 ch 0 step 0 Recv(from 0") != std::string::npos);
  CHECK(m.find("waits for a message from rank") != std::string::npos);
}

TEST_CASE("deadlock only with small FIFOs: send twice / then receive", "[simulator]") {
  // Each rank sends two messages before receiving: fine with 2 slots,
  // deadlocked with 1 (both block on their second send).
  auto job = collectiveJob(CollKind::AllGather, 2, 0, 4, false);
  for (int r = 0; r < 2; ++r) {
    const int p = 1 - r;
    job.schedules.push_back(one({send(p, 2, Buf::Input, 0), send(p, 2, Buf::Input, 2),
                                 recv(p, 2, 4 * static_cast<size_t>(p)),
                                 recv(p, 2, 4 * static_cast<size_t>(p) + 2),
                                 Step{.kind = StepKind::Copy, .src = Buf::Input, .dst = Buf::Output,
                                      .dstOff = 4 * static_cast<size_t>(r), .count = 4}}));
  }
  SimOptions opt;
  opt.fifoDepth = 0;
  auto res = simulate<double>(job, inputs(2, 4), opt);
  INFO(res.summary());
  CHECK(res.ok());
  opt.fifoDepth = 2;
  CHECK(simulate<double>(job, inputs(2, 4), opt).ok());
  opt.fifoDepth = 1;
  res = simulate<double>(job, inputs(2, 4), opt);
  CHECK(res.has(ErrorKind::Deadlock));
  CHECK(res.summary().find("free slot on the link to rank") != std::string::npos);
}

TEST_CASE("the real ring needs two FIFO slots (minFifoSlots)", "[simulator]") {
  for (auto kind : {CollKind::AllReduce, CollKind::AllGather, CollKind::ReduceScatter}) {
    Case c;
    c.kind = kind;
    c.algo = Algo::Ring;
    c.nranks = 4;
    c.count = 64;
    c.fifoDepth = 1;
    const CaseOutcome o = runCase(c);
    REQUIRE_FALSE(o.failures.empty());
    CHECK(o.failures[0].rfind("deadlock", 0) == 0);
    c.fifoDepth = 2;
    CHECK(runCase(c).failures.empty());
    CHECK(coll::sched::minFifoSlots(kind, Algo::Ring) == 2);
  }
}

TEST_CASE("final rules: missing final / double final / reducing a finished value",
          "[simulator]") {
  SECTION("no final anywhere: Output keeps a non-final value") {
    std::vector<Schedule> s = {one({rrcs(1, 1, 4, false)}), one({send(0, 4), recv(0, 4)})};
    auto res = simulate<double>(allReduceJob(2, 4, s), inputs(2, 4), {});
    CHECK(res.has(ErrorKind::NonFinalOutput));
  }
  SECTION("the forwarded value finished again") {
    std::vector<Schedule> s = {one({rrcs(1, 1, 4, true)}), one({send(0, 4), recv(0, 4, 0, true)})};
    auto res = simulate<double>(allReduceJob(2, 4, s), inputs(2, 4), {});
    CHECK(res.has(ErrorKind::DoubleFinal));
  }
  SECTION("a finished value reduced again") {
    // Rank 1 adds its input to the finished sum it gets back.
    std::vector<Schedule> s = {one({rrcs(1, 1, 4, true)}), one({send(0, 4), rrc(0, 4, false)})};
    auto res = simulate<double>(allReduceJob(2, 4, s), inputs(2, 4), {});
    CHECK(res.has(ErrorKind::ReducedFinal));
  }
  SECTION("integer mode: post is a multiplier, so missing/double posts change values") {
    SimOptions opt;
    opt.postU64 = 5;
    std::vector<std::vector<uint64_t>> in = {{1, 2}, {10, 20}};
    auto good = simulate<uint64_t>(allReduceJob(2, 2, goodPair(2)), in, opt);
    REQUIRE(good.ok());
    CHECK(good.outputs[1][1] == 110);
  }
}

TEST_CASE("non-root writes Output of Reduce; a step writes Input; bad peers and bounds",
          "[simulator]") {
  SECTION("reduce non-root") {
    JobSpec job = collectiveJob(CollKind::Reduce, 2, 0, 4, false);
    job.schedules = {one({rrc(1, 4, true)}),
                     one({Step{.kind = StepKind::Copy, .src = Buf::Input, .dst = Buf::Output, .count = 4},
                          send(0, 4)})};
    auto res = simulate<double>(job, inputs(2, 4), {});
    REQUIRE(res.has(ErrorKind::InvalidStep));
    CHECK(res.summary().find("writes Output on a rank that must not") != std::string::npos);
  }
  SECTION("writes Input") {
    auto s = goodPair(4);
    s[1] = one({send(0, 4), Step{.kind = StepKind::Recv, .dst = Buf::Input, .recvPeer = 0, .count = 4}});
    auto res = simulate<double>(allReduceJob(2, 4, s), inputs(2, 4), {});
    CHECK(res.summary().find("writes Input") != std::string::npos);
  }
  SECTION("out of bounds, zero count, bad peer, final in a non-reducing collective") {
    JobSpec job = collectiveJob(CollKind::Broadcast, 2, 0, 4, false);
    job.schedules = {one({send(1, 5), Step{.kind = StepKind::Send, .src = Buf::Input, .sendPeer = 7, .count = 1}}),
                     one({recv(0, 0), recv(0, 4, 0, true)})};
    auto res = simulate<double>(job, inputs(2, 4), {});
    const std::string m = res.summary();
    CHECK(m.find("reads past Input") != std::string::npos);
    CHECK(m.find("bad sendPeer") != std::string::npos);
    CHECK(m.find("zero count") != std::string::npos);
    CHECK(m.find("final step in a non-reducing") != std::string::npos);
  }
  SECTION("reads Output before anything wrote it") {
    auto s = goodPair(4);
    s[1] = one({send(0, 4, Buf::Output), recv(0, 4)});
    auto res = simulate<double>(allReduceJob(2, 4, s), inputs(2, 4), {});
    CHECK(res.has(ErrorKind::ReadsUnwritten));
  }
}

TEST_CASE("non-canonical one-shot order is caught as not bit-identical", "[simulator]") {
  // Each rank starts from its own input, then adds the others in rank order:
  // every rank sums in a different order, so doubles differ in the last bits.
  const int N = 4;
  const size_t n = 512;
  std::vector<Schedule> s;
  for (int r = 0; r < N; ++r) {
    std::vector<Step> st;
    for (int j = 1; j < N; ++j) st.push_back(send((r + j) % N, n));
    st.push_back(Step{.kind = StepKind::Copy, .src = Buf::Input, .dst = Buf::Output, .count = n});
    int left = N - 1;
    for (int q = 0; q < N; ++q)
      if (q != r) st.push_back(rrc(q, n, --left == 0, Buf::Output));
    s.push_back(one(st));
  }
  std::vector<std::vector<double>> in(N);
  uint64_t x = 88172645463325252ULL;
  for (auto& v : in)
    for (size_t i = 0; i < n; ++i) {
      x ^= x << 13, x ^= x >> 7, x ^= x << 17;
      v.push_back(static_cast<double>(x % 1000003) / 7.0 - 7e4);
    }
  auto res = simulate<double>(allReduceJob(N, n, s), in, {});
  INFO(res.summary());
  CHECK(res.has(ErrorKind::NotBitIdentical));
  // The real one-shot (canonical order) on the same data is bit-identical.
  std::vector<Schedule> good;
  for (int r = 0; r < N; ++r) good.push_back(coll::sched::oneShotAllReduce(r, N, n, {1, 1 << 20}));
  auto ok = simulate<double>(allReduceJob(N, n, good), in, {});
  INFO(ok.summary());
  CHECK(ok.ok());
}

TEST_CASE("in-place hazard: reading Input after Output overwrote it", "[simulator]") {
  // In place, rank 1 receives x0 into Output (== Input) and then adds its
  // own Input, which is gone.
  std::vector<Schedule> s = {one({send(1, 4), rrc(1, 4, true)}),
                             one({send(0, 4), recv(0, 4),
                                  Step{.kind = StepKind::LocalReduce, .src = Buf::Input,
                                       .dst = Buf::Output, .final = true, .count = 4}})};
  auto res = simulate<double>(allReduceJob(2, 4, s, /*inPlace=*/true), inputs(2, 4), {});
  CHECK(res.has(ErrorKind::InPlaceHazard));
  // The same schedule out of place is fine.
  CHECK(simulate<double>(allReduceJob(2, 4, s, false), inputs(2, 4), {}).ok());
}

TEST_CASE("the reference check catches wrong values the structural checks allow",
          "[simulator]") {
  // Rank 1 "finishes" x0 alone (forgetting its own contribution) and sends
  // it back: final exactly once, outputs identical, but the value is wrong.
  Case c;
  c.kind = CollKind::AllReduce;
  c.nranks = 2;
  c.count = 8;
  JobSpec job = collectiveJob(CollKind::AllReduce, 2, 0, 8, false);
  job.schedules = {one({send(1, 8), recv(1, 8)}),
                   one({recv(0, 8, 0, true), send(0, 8, Buf::Output)})};
  const CaseOutcome o = runJob(c, job);
  REQUIRE_FALSE(o.failures.empty());
  CHECK(o.failures[0].find("expected") != std::string::npos);
  // Also in integer mode.
  c.integer = true;
  CHECK_FALSE(runJob(c, job).failures.empty());
}

TEST_CASE("the rounds measure the critical path", "[simulator]") {
  // Broadcast down a chain of 8 with 4 chunks: 7 hops for the first chunk,
  // one more per later chunk, +1 for the start: N + k - 1 = 11 rounds.
  Case c;
  c.kind = CollKind::Broadcast;
  c.algo = Algo::Pipeline;
  c.nranks = 8;
  c.count = 64;
  c.chunking = {1, 16};
  CHECK(runCase(c).rounds == 11);
  // Direct send of 5 chunks: k + 1 rounds.
  c.kind = CollKind::Send;
  c.algo = Algo::Direct;
  c.nranks = 2;
  c.count = 80;
  CHECK(runCase(c).rounds == 6);
}
