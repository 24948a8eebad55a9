// plan_info_test.cc — collGetPlanInfo: argument checks, and that it reports
// the decision the calls themselves take (COLL_ALGO forcing included).
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include <unistd.h>

#include "rank_threads.h"
#include "scoped_env.h"

using colltest::destroyComms;
using colltest::makeComms;
using colltest::runRanks;
using colltest::ScopedEnv;
using Catch::Matchers::Contains;

namespace {

// coll_api_test also runs with COLL_TRANSPORT=socket.
std::string expectedTransport() {
  const char* t = std::getenv("COLL_TRANSPORT");
  return t != nullptr && std::strcmp(t, "socket") == 0 ? "socket" : "shm";
}

}  // namespace

TEST_CASE("collGetPlanInfo validates its arguments like the calls do", "[api][planinfo]") {
  auto comms = makeComms(2);
  REQUIRE(comms.size() == 2);
  collComm_t comm = comms[0];
  collPlanInfo_t info;

  CHECK(collGetPlanInfo(nullptr, collCollAllReduce, 16, collFloat32, 0, &info) == collInvalidArgument);
  CHECK_THAT(collGetLastError(nullptr), Contains("comm is NULL"));
  int garbage = 0;
  CHECK(collGetPlanInfo(reinterpret_cast<collComm_t>(&garbage), collCollAllReduce, 16, collFloat32, 0, &info) ==
        collInvalidArgument);
  CHECK_THAT(collGetLastError(nullptr), Contains("not a live communicator"));

  CHECK(collGetPlanInfo(comm, collCollAllReduce, 16, collFloat32, 0, nullptr) == collInvalidArgument);
  CHECK_THAT(collGetLastError(comm), Contains("info is NULL"));
  CHECK(collGetPlanInfo(comm, static_cast<collCollective_t>(7), 16, collFloat32, 0, &info) == collInvalidArgument);
  CHECK_THAT(collGetLastError(comm), Contains("collective 7"));
  CHECK(collGetPlanInfo(comm, static_cast<collCollective_t>(-1), 16, collFloat32, 0, &info) == collInvalidArgument);
  CHECK(collGetPlanInfo(comm, collCollAllReduce, 16, static_cast<collDataType_t>(99), 0, &info) == collInvalidArgument);
  CHECK_THAT(collGetLastError(comm), Contains("datatype 99"));
  CHECK(collGetPlanInfo(comm, collCollBroadcast, 16, collFloat32, 2, &info) == collInvalidArgument);
  CHECK_THAT(collGetLastError(comm), Contains("root 2"));
  CHECK(collGetPlanInfo(comm, collCollSend, 16, collFloat32, -1, &info) == collInvalidArgument);
  CHECK_THAT(collGetLastError(comm), Contains("peer -1"));
  CHECK(collGetPlanInfo(comm, collCollAllGather, SIZE_MAX / 4, collFloat32, 0, &info) == collInvalidArgument);
  CHECK_THAT(collGetLastError(comm), Contains("overflows"));

  // Argument errors leave the comm usable; the root is ignored where there is none.
  CHECK(collGetPlanInfo(comm, collCollAllReduce, 16, collFloat32, 12345, &info) == collSuccess);
  CHECK(std::string(info.algorithm) != "");
  CHECK(collGetPlanInfo(comm, collCollAllReduce, 0, collFloat32, 0, &info) == collSuccess);
  CHECK(std::string(info.algorithm) == "none");
  CHECK(info.predictedSeconds == 0);
  CHECK(collGetPlanInfo(comm, collCollSend, 16, collFloat32, 0, &info) == collSuccess);  // to itself
  CHECK(std::string(info.algorithm) == "none");
  destroyComms(comms);
}

TEST_CASE("collGetPlanInfo: the terms add up to the prediction and the cost is the transport's", "[api][planinfo]") {
  auto comms = makeComms(2);
  REQUIRE(comms.size() == 2);
  for (collCollective_t k : {collCollAllReduce, collCollAllGather, collCollReduceScatter, collCollBroadcast,
                             collCollReduce, collCollSend, collCollRecv}) {
    for (size_t count : {size_t{1}, size_t{1000}, size_t{1} << 22}) {
      collPlanInfo_t info;
      REQUIRE(collGetPlanInfo(comms[0], k, count, collFloat32, 1, &info) == collSuccess);
      INFO("collective " << k << " count " << count << " algo " << info.algorithm);
      CHECK(std::string(info.transport) == expectedTransport());
      std::string source = "transport default (";
      source += expectedTransport();
      source += ")";
      CHECK_THAT(info.costSource, Contains(source));
      CHECK(info.alpha > 0);
      CHECK(info.beta > 0);
      CHECK(info.nranks == 2);
      CHECK(info.nChannels >= 1);
      CHECK(info.chunkBytes >= 4);
      CHECK(info.chunks >= 1);
      CHECK(info.alphaSeconds == Approx(info.hops * info.alpha));
      CHECK(info.betaSeconds == Approx(info.byteTerm * info.beta));
      CHECK(info.overheadSeconds == Approx(info.extraMessages * info.overhead));
      CHECK(info.handoffSeconds == Approx(info.hops * info.handoff));
      CHECK(info.predictedSeconds ==
            Approx(info.alphaSeconds + info.handoffSeconds + info.overheadSeconds + info.betaSeconds));
      CHECK(info.predictedSeconds > 0);
      CHECK(std::string(info.formula) != "n/a");
      size_t factor = (k == collCollAllGather || k == collCollReduceScatter) ? 2 : 1;
      CHECK(info.bytes == count * 4 * factor);
    }
  }
  destroyComms(comms);
}

TEST_CASE("collGetPlanInfo: shared CPUs and a handoff per hop only where the ranks outnumber the CPUs", "[api][planinfo]") {
  unsetenv("COLL_COST_HANDOFF");
  const long cpus = sysconf(_SC_NPROCESSORS_ONLN);
  REQUIRE(cpus >= 1);
  // shm's alpha is a spinning receiver's latency and it states a handoff;
  // the socket transport's alpha already prices a wake-up.
  const double stated = expectedTransport() == "shm" ? 1.5e-6 : 0.0;
  auto planHandoff = [cpus](int n) {
    auto comms = makeComms(n);
    REQUIRE(comms.size() == static_cast<size_t>(n));
    collPlanInfo_t info;
    REQUIRE(collGetPlanInfo(comms[n - 1], collCollAllReduce, 1000, collFloat32, -1, &info) == collSuccess);
    CHECK(info.sharedCpus == (n > cpus ? cpus : 0));
    CHECK(info.handoffSeconds == Approx(info.hops * info.handoff));
    CHECK(info.predictedSeconds ==
          Approx(info.alphaSeconds + info.handoffSeconds + info.overheadSeconds + info.betaSeconds));
    destroyComms(comms);
    return info.handoff;
  };
  if (cpus >= 2) {
    CHECK(planHandoff(2) == 0);  // a core per rank
    ScopedEnv env("COLL_COST_HANDOFF", "4e-6");
    CHECK(planHandoff(2) == 0);  // the variable prices shared cores; there are none
  }
  if (cpus + 1 > 32) {
    WARN("skipped the shared-core half: " << cpus << " CPUs would need " << cpus + 1 << " ranks");
    return;
  }
  const int over = static_cast<int>(cpus) + 1;
  CHECK(planHandoff(over) == stated);
  {
    ScopedEnv env("COLL_COST_HANDOFF", "4e-6");
    CHECK(planHandoff(over) == 4e-6);
  }
  // The comm tells the tuner its transport and that the ranks share cores:
  // over TCP a 1 MiB broadcast from 4 ranks on takes the tree (not at 5,
  // where the tree saves one hop of 4), over shm the chain.
  unsetenv("COLL_ALGO");
  const int n = over == 5 ? 6 : std::max(over, 4);
  auto comms = makeComms(n);
  REQUIRE(comms.size() == static_cast<size_t>(n));
  collPlanInfo_t info;
  REQUIRE(collGetPlanInfo(comms[0], collCollBroadcast, (1 << 20) / 4, collFloat32, 0, &info) == collSuccess);
  CHECK(std::string(info.algorithm) == (expectedTransport() == "socket" ? "tree" : "pipeline"));
  destroyComms(comms);
}

TEST_CASE("collGetPlanInfo reports the algorithm COLL_ALGO forces, before and after the call", "[api][planinfo]") {
  for (const char* algo : {"tree", "ring", "oneshot", "doubling", "halving"}) {
    std::string spec = std::string("allreduce:") + algo;
    ScopedEnv env("COLL_ALGO", spec.c_str());
    auto comms = makeComms(4);
    REQUIRE(comms.size() == 4);
    const size_t count = 100000;
    collPlanInfo_t before;
    REQUIRE(collGetPlanInfo(comms[1], collCollAllReduce, count, collFloat32, -1, &before) == collSuccess);
    CHECK(std::string(before.algorithm) == algo);
    CHECK(before.forced == 1);

    std::vector<std::vector<float>> in(4, std::vector<float>(count, 1.0f)), out(4, std::vector<float>(count));
    runRanks(comms, [&](int r, collComm_t c) {
      CHECK(collAllReduce(in[r].data(), out[r].data(), count, collFloat32, collSum, c, nullptr) == collSuccess);
    });
    CHECK(out[1][count - 1] == 4.0f);
    collPlanInfo_t after;  // now from the plan cache
    REQUIRE(collGetPlanInfo(comms[1], collCollAllReduce, count, collFloat32, -1, &after) == collSuccess);
    CHECK(std::string(after.algorithm) == algo);
    CHECK(after.predictedSeconds == before.predictedSeconds);
    CHECK(after.nChannels == before.nChannels);
    CHECK(after.chunkBytes == before.chunkBytes);

    // Other collectives are not forced.
    collPlanInfo_t ag;
    REQUIRE(collGetPlanInfo(comms[1], collCollAllGather, count, collFloat32, -1, &ag) == collSuccess);
    CHECK(ag.forced == 0);
    destroyComms(comms);
  }
}

TEST_CASE("collGetPlanInfo without COLL_ALGO: the cheapest predicted algorithm", "[api][planinfo]") {
  unsetenv("COLL_ALGO");
  auto comms = makeComms(4);
  REQUIRE(comms.size() == 4);
  collPlanInfo_t small, large;
  REQUIRE(collGetPlanInfo(comms[0], collCollAllReduce, 2, collFloat32, -1, &small) == collSuccess);
  REQUIRE(collGetPlanInfo(comms[0], collCollAllReduce, 16 << 20, collFloat32, -1, &large) == collSuccess);
  CHECK(small.forced == 0);
  // Small calls are latency-bound, large ones bandwidth-bound, in the model.
  CHECK(small.alphaSeconds > small.betaSeconds);
  CHECK(large.betaSeconds > large.alphaSeconds);
  destroyComms(comms);
}

TEST_CASE("COLL_COST_ALPHA/BETA reach collGetPlanInfo; a malformed COLL_COST_FILE fails init", "[api][planinfo]") {
  {
    ScopedEnv a("COLL_COST_ALPHA", "3e-6");
    ScopedEnv b("COLL_COST_BETA", "5e-10");
    auto comms = makeComms(2);
    REQUIRE(comms.size() == 2);
    collPlanInfo_t info;
    REQUIRE(collGetPlanInfo(comms[0], collCollAllReduce, 1 << 20, collFloat32, -1, &info) == collSuccess);
    CHECK(info.alpha == 3e-6);
    CHECK(info.beta == 5e-10);
    CHECK_THAT(info.costSource, Contains("COLL_COST_ALPHA") && Contains("COLL_COST_BETA"));
    destroyComms(comms);
  }
  char path[] = "/tmp/coll_plan_cost_XXXXXX";
  int fd = mkstemp(path);
  REQUIRE(fd >= 0);
  std::string text = "format 1\ntransport ";
  text += expectedTransport();
  text += "\nalpha 2e-6\nbeta oops\n";
  REQUIRE(write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size()));
  close(fd);
  ScopedEnv f("COLL_COST_FILE", path);
  std::vector<collComm_t> comms(2, nullptr);
  CHECK(collCommInitAll(comms.data(), 2, nullptr) == collInvalidArgument);
  CHECK_THAT(collGetLastError(nullptr), Contains(path) && Contains("line 4"));
  std::remove(path);
}
