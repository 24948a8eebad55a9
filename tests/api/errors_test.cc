// errors_test.cc — bad input, deadlines, abort and the bootstrap: every
// failure is an error code plus a message, never a crash or a hang
// (mismatched ranks: mismatch_test.cc).
#include <catch2/catch.hpp>

#include <arpa/inet.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "every_rank.h"
#include "rank_threads.h"
#include "scoped_env.h"

using colltest::secondsSince;
using colltest::destroyComms;
using colltest::makeComms;
using colltest::runRanks;
using colltest::ScopedEnv;
using Catch::Matchers::Contains;


TEST_CASE("bad arguments get a specific error and a message, and touch nothing", "[api][errors]") {
  auto comms = makeComms(1);
  REQUIRE(comms.size() == 1);
  collComm_t comm = comms[0];
  std::vector<float> in(16, 1.0f), out(16, -1.0f);

  CHECK(collAllReduce(in.data(), out.data(), 16, collFloat32, collSum, nullptr, nullptr) == collInvalidArgument);
  CHECK_THAT(collGetLastError(nullptr), Contains("comm is NULL"));

  CHECK(collAllReduce(in.data(), out.data(), 16, static_cast<collDataType_t>(99), collSum, comm, nullptr) == collInvalidArgument);
  CHECK_THAT(collGetLastError(comm), Contains("datatype 99"));

  CHECK(collAllReduce(in.data(), out.data(), 16, collFloat32, static_cast<collRedOp_t>(77), comm, nullptr) == collInvalidArgument);
  CHECK_THAT(collGetLastError(comm), Contains("op 77"));

  CHECK(collBroadcast(in.data(), out.data(), 16, collFloat32, 1, comm, nullptr) == collInvalidArgument);
  CHECK_THAT(collGetLastError(comm), Contains("root 1"));

  CHECK(collSend(in.data(), 16, collFloat32, -1, comm, nullptr) == collInvalidArgument);
  CHECK_THAT(collGetLastError(comm), Contains("peer -1"));

  CHECK(collAllReduce(in.data(), out.data(), SIZE_MAX / 2, collFloat32, collSum, comm, nullptr) == collInvalidArgument);
  CHECK_THAT(collGetLastError(comm), Contains("overflows"));

  CHECK(collAllReduce(in.data(), in.data() + 1, 8, collFloat32, collSum, comm, nullptr) == collInvalidArgument);
  CHECK_THAT(collGetLastError(comm), Contains("overlap"));

  CHECK(collAllReduce(in.data(), nullptr, 16, collFloat32, collSum, comm, nullptr) == collInvalidArgument);
  CHECK_THAT(collGetLastError(comm), Contains("recvbuff is NULL"));

  CHECK(collAllReduce(nullptr, out.data(), 16, collFloat32, collSum, comm, nullptr) == collInvalidArgument);
  CHECK_THAT(collGetLastError(comm), Contains("sendbuff is NULL"));

  for (float v : out) CHECK(v == -1.0f);  // nothing was written by any failed call

  // Count 0 succeeds even with NULL buffers, as in NCCL.
  CHECK(collAllReduce(nullptr, nullptr, 0, collFloat32, collSum, comm, nullptr) == collSuccess);
  // The communicator is still usable after argument errors.
  CHECK(collAllReduce(in.data(), out.data(), 16, collFloat32, collSum, comm, nullptr) == collSuccess);
  CHECK(out[3] == 1.0f);

  CHECK(collGroupEnd() == collInvalidUsage);
  CHECK_THAT(collGetLastError(nullptr), Contains("without a matching collGroupStart"));

  destroyComms(comms);
  // A destroyed handle is recognized, not dereferenced.
  CHECK(collAllReduce(in.data(), out.data(), 16, collFloat32, collSum, comm, nullptr) == collInvalidArgument);
  CHECK_THAT(collGetLastError(nullptr), Contains("not a live communicator"));
  CHECK(collCommDestroy(comm) == collInvalidArgument);
}

TEST_CASE("init rejects bad ranks, ids and configs", "[api][errors]") {
  collComm_t comm = nullptr;
  collUniqueId garbage;
  memset(&garbage, 0x5a, sizeof(garbage));
  CHECK(collCommInitRank(&comm, 2, garbage, 0) == collInvalidArgument);
  CHECK_THAT(collGetLastError(nullptr), Contains("not a collUniqueId"));
  CHECK(collCommInitRank(&comm, 2, garbage, 2) == collInvalidArgument);
  CHECK_THAT(collGetLastError(nullptr), Contains("rank 2 is out of range"));
  CHECK(collCommInitRank(&comm, 0, garbage, 0) == collInvalidArgument);
  collConfig_t cfg = COLL_CONFIG_INITIALIZER;
  cfg.magic = 1;
  CHECK(collCommInitRankConfig(&comm, 1, garbage, 0, &cfg) == collInvalidArgument);
  CHECK_THAT(collGetLastError(nullptr), Contains("COLL_CONFIG_INITIALIZER"));
  {
    ScopedEnv e("COLL_ALGO", "allreduce:bogus");
    std::vector<collComm_t> comms(1);
    CHECK(collCommInitAll(comms.data(), 1, nullptr) == collInvalidArgument);
    CHECK_THAT(collGetLastError(nullptr), Contains("unknown algorithm 'bogus'"));
  }
  CHECK(comm == nullptr);
}

TEST_CASE("COLL_STAGED_PIECE_BYTES out of range fails init, naming it", "[api][errors]") {
  for (const char* bad : {"100", "2G", "4Q"}) {
    ScopedEnv e("COLL_STAGED_PIECE_BYTES", bad);
    std::vector<collComm_t> comms(2, nullptr);
    CHECK(collCommInitAll(comms.data(), 2, nullptr) == collInvalidArgument);
    CHECK_THAT(collGetLastError(nullptr), Contains("COLL_STAGED_PIECE_BYTES"));
  }
  ScopedEnv ok("COLL_STAGED_PIECE_BYTES", "64K");
  auto comms = makeComms(2);
  CHECK(comms.size() == 2);
  destroyComms(comms);
}

TEST_CASE("a rank that never calls: the others time out naming it", "[api][errors]") {
  ScopedEnv t("COLL_TIMEOUT", "700ms");
  auto comms = makeComms(3);
  REQUIRE(comms.size() == 3);
  std::vector<collResult_t> res(3, collSuccess);
  std::vector<std::string> msg(3);
  auto t0 = std::chrono::steady_clock::now();
  runRanks(comms, [&](int rank, collComm_t comm) {
    if (rank == 2) return;  // the stuck rank
    std::vector<float> buf(1000, 1.0f);
    res[rank] = collAllReduce(buf.data(), buf.data(), 1000, collFloat32, collSum, comm, nullptr);
    msg[rank] = collGetLastError(comm);
  });
  double took = secondsSince(t0);
  CHECK(took < 5.0);
  // The first rank to time out names the rank it waited on; the others, told
  // of it, add what they themselves were waiting for.  Rank 2 shows up in
  // some survivor's message either way.
  bool named = false, timedOut = false;
  for (int r = 0; r < 2; ++r) {
    INFO("rank " << r << ": " << msg[r]);
    CHECK((res[r] == collTimeout || res[r] == collRemoteError));
    timedOut |= res[r] == collTimeout || msg[r].find("timed out") != std::string::npos;
    named |= msg[r].find("waiting for rank 2") != std::string::npos;
  }
  CHECK(timedOut);
  CHECK(named);
  destroyComms(comms);
}

TEST_CASE("collCommAbort from another thread unblocks a waiting rank within 100 ms", "[api][errors]") {
  ScopedEnv t("COLL_TIMEOUT", "60s");
  auto comms = makeComms(2);
  REQUIRE(comms.size() == 2);
  std::atomic<bool> returned{false};
  collResult_t res = collSuccess;
  std::chrono::steady_clock::time_point abortedAt;
  double latency = -1;
  std::thread waiter([&] {
    std::vector<float> buf(100, 1.0f);
    res = collAllReduce(buf.data(), buf.data(), 100, collFloat32, collSum, comms[0], nullptr);
    latency = secondsSince(abortedAt);
    returned = true;
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  CHECK_FALSE(returned.load());
  abortedAt = std::chrono::steady_clock::now();
  CHECK(collCommAbort(comms[0]) == collSuccess);
  waiter.join();
  CHECK(res == collAborted);
  CHECK(latency < 0.1);
  collResult_t async = collSuccess;
  CHECK(collCommGetAsyncError(comms[0], &async) == collSuccess);
  CHECK(async == collAborted);
  std::vector<float> b(4);
  CHECK(collAllReduce(b.data(), b.data(), 4, collFloat32, collSum, comms[0], nullptr) == collInvalidUsage);
  destroyComms(comms);
}

TEST_CASE("strangers at the bootstrap root are dropped; the job still starts", "[api][errors][bootstrap]") {
  collUniqueId id;
  REQUIRE(collGetUniqueId(&id) == collSuccess);
  // The id starts with magic, version, address length, then the sockaddr.
  sockaddr_in addr{};
  memcpy(&addr, id.internal + 8, sizeof(addr));
  REQUIRE(addr.sin_family == AF_INET);
  auto connectAndSend = [&](const std::string& bytes) {
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    REQUIRE(fd >= 0);
    REQUIRE(connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0);
    if (!bytes.empty()) REQUIRE(send(fd, bytes.data(), bytes.size(), MSG_NOSIGNAL) == static_cast<ssize_t>(bytes.size()));
    return fd;
  };
  int garbage = connectAndSend(std::string(200, '\xff'));                // wrong secret
  int silent = connectAndSend("");                                        // says nothing
  int shortHello = connectAndSend("hello");                               // truncated
  // More that stay silent while the ranks arrive: hellos are read in
  // parallel, so they must not delay init (one after another, each held
  // everyone up for its 2 s hello deadline).
  std::vector<int> silentMore;
  for (int i = 0; i < 5; ++i) silentMore.push_back(connectAndSend(""));
  std::vector<collComm_t> comms(2, nullptr);
  std::vector<collResult_t> res(2);
  std::vector<std::thread> ts;
  auto t0 = std::chrono::steady_clock::now();
  for (int r = 0; r < 2; ++r)
    ts.emplace_back([&, r] { res[r] = collCommInitRank(&comms[r], 2, id, r); });
  for (auto& t : ts) t.join();
  double initSeconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  CHECK(initSeconds < 1.5);
  close(garbage);
  close(silent);
  close(shortHello);
  for (int fd : silentMore) close(fd);
  CHECK(res[0] == collSuccess);
  CHECK(res[1] == collSuccess);
  if (res[0] == collSuccess && res[1] == collSuccess) {
    runRanks(comms, [&](int, collComm_t comm) {
      int32_t v = 1;
      collAllReduce(&v, &v, 1, collInt32, collSum, comm, nullptr);
    });
    destroyComms(comms);
  }
}

TEST_CASE("init names the ranks that never arrived", "[api][errors][bootstrap]") {
  collUniqueId id;
  {
    ScopedEnv t("COLL_TIMEOUT", "1s");  // the root's deadline
    REQUIRE(collGetUniqueId(&id) == collSuccess);
  }
  std::vector<collComm_t> comms(3, nullptr);
  std::vector<collResult_t> res(2);
  std::vector<std::string> msg(2);
  std::vector<std::thread> ts;
  auto t0 = std::chrono::steady_clock::now();
  for (int r = 0; r < 2; ++r)  // rank 2 never comes
    ts.emplace_back([&, r] {
      collConfig_t cfg = COLL_CONFIG_INITIALIZER;
      cfg.timeoutMs = 10000;
      res[r] = collCommInitRankConfig(&comms[r], 3, id, r, &cfg);
      msg[r] = collGetLastError(nullptr);
    });
  for (auto& t : ts) t.join();
  CHECK(secondsSince(t0) < 5.0);
  for (int r = 0; r < 2; ++r) {
    INFO("rank " << r << ": " << msg[r]);
    CHECK(res[r] == collTimeout);
    CHECK_THAT(msg[r], Contains("rank(s) 2 of 3 never arrived"));
    CHECK(comms[r] == nullptr);
  }
}

TEST_CASE("send/recv to self must pair up inside one group", "[api][errors]") {
  auto comms = makeComms(1);
  REQUIRE(comms.size() == 1);
  std::vector<int32_t> a(10, 7), b(10, 0);
  CHECK(collSend(a.data(), 10, collInt32, 0, comms[0], nullptr) == collInvalidUsage);
  CHECK_THAT(collGetLastError(comms[0]), Contains("same collGroupStart/End"));
  collGroupStart();
  collSend(a.data(), 10, collInt32, 0, comms[0], nullptr);
  CHECK(collGroupEnd() == collInvalidUsage);
  CHECK_THAT(collGetLastError(nullptr), Contains("1 collSend to itself but 0 collRecv"));
  collGroupStart();
  collSend(a.data(), 10, collInt32, 0, comms[0], nullptr);
  collRecv(b.data(), 9, collInt32, 0, comms[0], nullptr);
  CHECK(collGroupEnd() == collArgMismatch);
  CHECK(b[0] == 0);  // nothing copied when a pair does not match
  destroyComms(comms);
}

TEST_CASE("a unique id whose address is cut short is refused at once", "[api][errors][bootstrap]") {
  collUniqueId id;
  REQUIRE(collGetUniqueId(&id) == collSuccess);
  // Layout: magic (4), version (2), address length (2), sockaddr, secret.
  uint16_t shortLen = 2;
  memcpy(id.internal + 6, &shortLen, sizeof(shortLen));
  collComm_t comm = nullptr;
  CHECK(collCommInitRank(&comm, 2, id, 1) == collInvalidArgument);
  CHECK_THAT(std::string(collGetLastError(nullptr)), Catch::Contains("2-byte address"));
}
