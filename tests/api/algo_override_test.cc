// algo_override_test.cc — the COLL_ALGO grammar: accepted forms and loud
// rejection of everything else.
#include <catch2/catch.hpp>

#include "tuner/algo_override.h"

using coll::sched::Algo;
using coll::sched::CollKind;
using coll::tune::AlgoOverride;
using Catch::Matchers::Contains;

TEST_CASE("COLL_ALGO rules with ranges pick by size", "[tuner]") {
  auto o = AlgoOverride::parse("allreduce:oneshot@0-4K,ring@4K-1M,tree@1M-inf;broadcast:pipeline");
  REQUIRE(o.isOk());
  const auto& v = o.value();
  CHECK(v.lookup(CollKind::AllReduce, 0) == Algo::OneShot);
  CHECK(v.lookup(CollKind::AllReduce, 4095) == Algo::OneShot);
  CHECK(v.lookup(CollKind::AllReduce, 4096) == Algo::Ring);
  CHECK(v.lookup(CollKind::AllReduce, (1 << 20) - 1) == Algo::Ring);
  CHECK(v.lookup(CollKind::AllReduce, 1 << 20) == Algo::Tree);
  CHECK(v.lookup(CollKind::AllReduce, SIZE_MAX - 1) == Algo::Tree);
  CHECK(v.lookup(CollKind::Broadcast, 12345) == Algo::Pipeline);
  CHECK_FALSE(v.lookup(CollKind::AllGather, 10).has_value());
}

TEST_CASE("a bare algorithm applies to every collective that has it", "[tuner]") {
  auto o = AlgoOverride::parse("ring");
  REQUIRE(o.isOk());
  CHECK(o.value().lookup(CollKind::AllReduce, 1) == Algo::Ring);
  CHECK(o.value().lookup(CollKind::AllGather, 1) == Algo::Ring);
  CHECK_FALSE(o.value().lookup(CollKind::Broadcast, 1).has_value());
}

TEST_CASE("COLL_ALGO rejects unknown names and malformed ranges, naming them", "[tuner]") {
  struct Bad {
    const char* text;
    const char* mention;
  };
  for (Bad b : {Bad{"allreduce:rign", "unknown algorithm 'rign'"}, Bad{"allreduc:ring", "unknown collective 'allreduc'"},
                Bad{"allgather:tree", "allgather has no 'tree'"}, Bad{"allreduce:ring@64K", "must be lo-hi"},
                Bad{"allreduce:ring@1X-2", "unknown size suffix"}, Bad{"allreduce:ring@8K-4K", "empty range"},
                Bad{"allreduce:", "empty rule"}, Bad{"bogus", "neither"}}) {
    auto o = AlgoOverride::parse(b.text);
    INFO(b.text);
    REQUIRE_FALSE(o.isOk());
    CHECK(o.status().code() == collInvalidArgument);
    CHECK_THAT(o.status().message(), Contains(b.mention));
  }
}
