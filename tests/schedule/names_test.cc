// names_test.cc — names, step predicates, the algorithm table, and
// buildSchedule's argument checks.
#include <catch2/catch.hpp>

#include <stdexcept>
#include <string>

#include "schedule/schedules.h"

using namespace coll::sched;

TEST_CASE("names", "[names]") {
  CHECK(std::string(collKindName(CollKind::AllReduce)) == "allreduce");
  CHECK(std::string(collKindName(CollKind::AllGather)) == "allgather");
  CHECK(std::string(collKindName(CollKind::ReduceScatter)) == "reducescatter");
  CHECK(std::string(collKindName(CollKind::Broadcast)) == "broadcast");
  CHECK(std::string(collKindName(CollKind::Reduce)) == "reduce");
  CHECK(std::string(collKindName(CollKind::Send)) == "send");
  CHECK(std::string(collKindName(CollKind::Recv)) == "recv");
  CHECK(std::string(algoName(Algo::Ring)) == "ring");
  CHECK(std::string(algoName(Algo::Tree)) == "tree");
  CHECK(std::string(algoName(Algo::OneShot)) == "oneshot");
  CHECK(std::string(algoName(Algo::Pipeline)) == "pipeline");
  CHECK(std::string(algoName(Algo::Direct)) == "direct");
  CHECK(std::string(algoName(Algo::Doubling)) == "doubling");
  CHECK(std::string(algoName(Algo::Halving)) == "halving");
  CHECK(std::string(stepKindName(StepKind::RecvReduceCopySend)) == "RecvReduceCopySend");
  CHECK(std::string(stepKindName(StepKind::LocalReduce)) == "LocalReduce");
}

TEST_CASE("step predicates follow step.h", "[names]") {
  struct Row {
    StepKind k;
    bool recv, send, src, dst;
  };
  const Row rows[] = {
      {StepKind::Send, false, true, true, false},
      {StepKind::Recv, true, false, false, true},
      {StepKind::RecvReduceSend, true, true, true, false},
      {StepKind::RecvReduceCopy, true, false, true, true},
      {StepKind::RecvReduceCopySend, true, true, true, true},
      {StepKind::RecvCopySend, true, true, false, true},
      {StepKind::Copy, false, false, true, true},
      {StepKind::LocalReduce, false, false, true, true},
  };
  for (const Row& r : rows) {
    INFO(stepKindName(r.k));
    CHECK(stepReceives(r.k) == r.recv);
    CHECK(stepSends(r.k) == r.send);
    CHECK(stepReadsSrc(r.k) == r.src);
    CHECK(stepWritesDst(r.k) == r.dst);
  }
}

TEST_CASE("algorithm table", "[names]") {
  CHECK(algoSupports(CollKind::AllReduce, Algo::Ring));
  CHECK(algoSupports(CollKind::AllReduce, Algo::Tree));
  CHECK(algoSupports(CollKind::AllReduce, Algo::OneShot));
  CHECK_FALSE(algoSupports(CollKind::AllReduce, Algo::Pipeline));
  CHECK(algoSupports(CollKind::AllGather, Algo::Ring));
  CHECK(algoSupports(CollKind::AllGather, Algo::OneShot));
  CHECK_FALSE(algoSupports(CollKind::AllGather, Algo::Tree));
  CHECK(algoSupports(CollKind::AllReduce, Algo::Doubling));
  CHECK(algoSupports(CollKind::AllGather, Algo::Doubling));
  CHECK_FALSE(algoSupports(CollKind::ReduceScatter, Algo::Doubling));
  CHECK(algoSupports(CollKind::AllReduce, Algo::Halving));
  CHECK_FALSE(algoSupports(CollKind::AllGather, Algo::Halving));
  CHECK(algoInPlaceSafe(CollKind::AllReduce, Algo::Halving, 6));
  CHECK(minFifoSlots(CollKind::AllReduce, Algo::Halving) == 1);
  CHECK_FALSE(algoSupports(CollKind::Broadcast, Algo::Doubling));
  CHECK(minFifoSlots(CollKind::AllReduce, Algo::Doubling) == 1);
  CHECK(algoInPlaceSafe(CollKind::AllReduce, Algo::Doubling, 7));
  CHECK(algoInPlaceSafe(CollKind::AllGather, Algo::Doubling, 7));
  CHECK(algoSupports(CollKind::ReduceScatter, Algo::OneShot));
  CHECK(algoInPlaceSafe(CollKind::ReduceScatter, Algo::OneShot, 7));  // starts from its own block
  CHECK(minFifoSlots(CollKind::ReduceScatter, Algo::OneShot) == 1);
  CHECK(algoSupports(CollKind::ReduceScatter, Algo::Ring));
  CHECK(algoSupports(CollKind::Broadcast, Algo::Pipeline));
  CHECK(algoSupports(CollKind::Broadcast, Algo::OneShot));
  CHECK(algoSupports(CollKind::Broadcast, Algo::Tree));
  CHECK(minFifoSlots(CollKind::Broadcast, Algo::Tree) == 1);
  CHECK_FALSE(algoSupports(CollKind::Reduce, Algo::Tree));
  CHECK_FALSE(algoSupports(CollKind::Broadcast, Algo::Ring));
  CHECK_FALSE(algoSupports(CollKind::Reduce, Algo::OneShot));
  CHECK(algoSupports(CollKind::Reduce, Algo::Pipeline));
  CHECK(algoSupports(CollKind::Send, Algo::Direct));
  CHECK(algoSupports(CollKind::Recv, Algo::Direct));
  CHECK_FALSE(algoSupports(CollKind::Send, Algo::Ring));
  CHECK(minFifoSlots(CollKind::AllReduce, Algo::Ring) == 2);
  CHECK(minFifoSlots(CollKind::AllReduce, Algo::Tree) == 1);
  CHECK(algoInPlaceSafe(CollKind::AllReduce, Algo::Ring, 8));
  CHECK(algoInPlaceSafe(CollKind::AllGather, Algo::Ring, 8));
  CHECK_FALSE(algoInPlaceSafe(CollKind::AllReduce, Algo::OneShot, 8));
  CHECK_FALSE(algoInPlaceSafe(CollKind::Send, Algo::Direct, 2));
}

TEST_CASE("buildSchedule dispatches and rejects bad arguments", "[names]") {
  const Chunking c{2, 64};
  const Schedule s = buildSchedule(CollKind::Broadcast, Algo::Pipeline, 1, 4, 1, 100, c);
  REQUIRE(s.channels.size() == 2);
  CHECK(s.channels[0].steps.front().kind == StepKind::Send);  // rank 1 is the root
  const Schedule r = buildSchedule(CollKind::Recv, Algo::Direct, 3, 4, 0, 100, c);
  CHECK(r.channels[0].steps.front().recvPeer == 0);
  // count 0: every channel present and empty.
  const Schedule e = buildSchedule(CollKind::AllReduce, Algo::Tree, 0, 4, 0, 0, c);
  REQUIRE(e.channels.size() == 2);
  CHECK(e.channels[0].steps.empty());

  CHECK_THROWS_AS(buildSchedule(CollKind::AllGather, Algo::Tree, 0, 4, 0, 10, c),
                  std::invalid_argument);
  CHECK_THROWS_AS(buildSchedule(CollKind::AllReduce, Algo::Ring, 4, 4, 0, 10, c),
                  std::invalid_argument);
  CHECK_THROWS_AS(buildSchedule(CollKind::AllReduce, Algo::Ring, 0, 0, 0, 10, c),
                  std::invalid_argument);
  CHECK_THROWS_AS(buildSchedule(CollKind::Broadcast, Algo::Pipeline, 0, 4, 4, 10, c),
                  std::invalid_argument);
  CHECK_THROWS_AS(buildSchedule(CollKind::Reduce, Algo::Pipeline, 0, 4, -1, 10, c),
                  std::invalid_argument);
  CHECK_THROWS_AS(buildSchedule(CollKind::Send, Algo::Direct, 0, 4, 9, 10, c),
                  std::invalid_argument);
  CHECK_THROWS_AS(buildSchedule(CollKind::AllReduce, Algo::Ring, 0, 4, 0, 10, Chunking{0, 64}),
                  std::invalid_argument);
  CHECK_THROWS_AS(buildSchedule(CollKind::AllReduce, Algo::Ring, 0, 4, 0, 10, Chunking{1, 0}),
                  std::invalid_argument);
  try {
    (void)buildSchedule(CollKind::AllGather, Algo::OneShot, 0, 4, 0, 10, c);
  } catch (const std::invalid_argument& ex) {
    CHECK(std::string(ex.what()) == "no algorithm oneshot for allgather");
  }
}

TEST_CASE("a Send to self is a self link", "[names]") {
  const Schedule s = buildSchedule(CollKind::Send, Algo::Direct, 2, 4, 2, 10, {1, 64});
  CHECK(s.channels[0].steps.front().sendPeer == 2);
}
