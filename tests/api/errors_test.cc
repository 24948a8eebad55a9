// errors_test.cc — bad input, mismatched ranks, deadlines and abort: every
// failure is an error code plus a message, never a crash or a hang.
#include <catch2/catch.hpp>

#include <arpa/inet.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "rank_threads.h"
#include "scoped_env.h"

using colltest::destroyComms;
using colltest::makeComms;
using colltest::runRanks;
using colltest::ScopedEnv;
using Catch::Matchers::Contains;

namespace {

double secondsSince(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}

// Every rank's result and last error of the one call it makes
// (call(rank, comm) returns the result), and how long they all took.
struct Outcome {
  std::vector<collResult_t> res;
  std::vector<std::string> msg;
  double seconds = 0;
};
template <class Call>
Outcome callOnEveryRank(const std::vector<collComm_t>& comms, Call call) {
  Outcome o;
  o.res.assign(comms.size(), collSuccess);
  o.msg.assign(comms.size(), "");
  const auto t0 = std::chrono::steady_clock::now();
  runRanks(comms, [&](int rank, collComm_t comm) {
    o.res[rank] = call(rank, comm);
    o.msg[rank] = collGetLastError(comm);
  });
  o.seconds = secondsSince(t0);
  return o;
}

}  // namespace

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

TEST_CASE("ranks that disagree on count, dtype or root get an error naming both", "[api][errors]") {
  ScopedEnv t("COLL_TIMEOUT", "20s");
  auto comms = makeComms(2);
  REQUIRE(comms.size() == 2);
  auto [res, msg, seconds] = callOnEveryRank(comms, [](int rank, collComm_t comm) {
    std::vector<float> buf(200, 1.0f);
    return collAllReduce(buf.data(), buf.data(), rank == 0 ? 100 : 128, collFloat32, collSum, comm, nullptr);
  });
  CHECK(seconds < 5.0);
  for (int r = 0; r < 2; ++r) {
    INFO("rank " << r << ": " << msg[r]);
    CHECK(res[r] != collSuccess);
  }
  // At least one rank saw the mismatch itself; it names both counts.
  bool named = (res[0] == collArgMismatch && msg[0].find("count 128 (rank 1) vs 100 (rank 0)") != std::string::npos) ||
               (res[1] == collArgMismatch && msg[1].find("count 100 (rank 0) vs 128 (rank 1)") != std::string::npos);
  CHECK(named);
  // The comm is unusable afterwards, and says why.
  std::vector<float> b(4);
  CHECK(collAllReduce(b.data(), b.data(), 4, collFloat32, collSum, comms[0], nullptr) != collSuccess);
  collResult_t async = collSuccess;
  CHECK(collCommGetAsyncError(comms[0], &async) == collSuccess);
  CHECK(async != collSuccess);
  // Every later call says it once, with the first failure's words: the
  // message does not grow call by call.
  for (int call = 0; call < 3; ++call)
    CHECK(collAllReduce(b.data(), b.data(), 4, collFloat32, collSum, comms[0], nullptr) != collSuccess);
  const std::string later = collGetLastError(comms[0]);
  INFO(later);
  size_t said = 0;
  for (size_t at = later.find("failed earlier"); at != std::string::npos; at = later.find("failed earlier", at + 1)) ++said;
  CHECK(said == 1);
  CHECK(later.find("count") != std::string::npos);  // the original cause
  destroyComms(comms);
}

TEST_CASE("tiny all-reduces (the board) that disagree get the same error", "[api][errors]") {
  ScopedEnv t("COLL_TIMEOUT", "20s");
  auto comms = makeComms(3);
  REQUIRE(comms.size() == 3);
  auto [res, msg, seconds] = callOnEveryRank(comms, [](int rank, collComm_t comm) {
    float buf[4] = {1, 2, 3, 4};
    // 8 B on ranks 0 and 1, 12 B on rank 2: both fit the board.
    return collAllReduce(buf, buf, rank == 2 ? 3 : 2, collFloat32, collSum, comm, nullptr);
  });
  CHECK(seconds < 5.0);
  for (int r = 0; r < 3; ++r) {
    INFO("rank " << r << ": " << msg[r]);
    CHECK(res[r] != collSuccess);
  }
  bool named = false;
  for (int r = 0; r < 2; ++r)
    named = named || (res[r] == collArgMismatch && msg[r].find("count 3 (rank 2) vs 2 (rank " + std::to_string(r) + ")") !=
                                                       std::string::npos);
  named = named || (res[2] == collArgMismatch && msg[2].find("vs 3 (rank 2)") != std::string::npos);
  CHECK(named);
  destroyComms(comms);
}

TEST_CASE("a call that takes the board on some ranks and the FIFOs on others fails on every rank", "[api][errors]") {
  // Counts across the board's limit (256 B per rank's part) put ranks 0 and
  // 1 on the board and rank 2 in the FIFOs; one rank in a group and the
  // others not does the same.  The FIFO rank's slow path finds the board
  // line of the same call and reports it; every rank then fails, long
  // before the timeout.  (Over sockets there is no board: the FIFOs' own
  // check reports the count.)
  ScopedEnv t("COLL_TIMEOUT", "20s");
  const char* transport = std::getenv("COLL_TRANSPORT");
  const bool board = transport == nullptr || std::string(transport) != "socket";
  const int variant = GENERATE(0, 1, 2);  // all-reduce counts, all-gather counts, group on rank 0 only
  if (variant == 2 && !board) return;      // without a board, grouped or not is the same path
  auto comms = makeComms(3);
  REQUIRE(comms.size() == 3);
  auto [res, msg, seconds] = callOnEveryRank(comms, [&](int rank, collComm_t comm) {
    std::vector<float> buf(3 * 80, 1.0f);
    if (variant == 0)
      return collAllReduce(buf.data(), buf.data(), rank == 2 ? 65 : 64, collFloat32, collSum, comm, nullptr);
    if (variant == 1) {
      const size_t count = rank == 2 ? 65 : 64;
      return collAllGather(buf.data() + rank * count, buf.data(), count, collFloat32, comm, nullptr);
    }
    if (rank != 0) return collAllReduce(buf.data(), buf.data(), 4, collFloat32, collSum, comm, nullptr);
    collGroupStart();
    const collResult_t queued = collAllReduce(buf.data(), buf.data(), 4, collFloat32, collSum, comm, nullptr);
    const collResult_t ran = collGroupEnd();
    return queued != collSuccess ? queued : ran;
  });
  CHECK(seconds < 5.0);
  for (int r = 0; r < 3; ++r) {
    INFO("variant " << variant << ", rank " << r << ": " << msg[r]);
    CHECK(res[r] != collSuccess);
  }
  // The rank in the FIFOs names what differs (or, for the group, says so).
  const int fifoRank = variant == 2 ? 0 : 2;
  INFO("variant " << variant << ": " << msg[fifoRank]);
  if (!board) {
    CHECK((res[0] == collArgMismatch || res[1] == collArgMismatch || res[2] == collArgMismatch));
  } else if (variant == 2) {
    CHECK(res[fifoRank] == collInvalidUsage);
    CHECK_THAT(msg[fifoRank], Contains("inside one"));
  } else {
    CHECK(res[fifoRank] == collArgMismatch);
    CHECK_THAT(msg[fifoRank], Contains("count"));
  }
  destroyComms(comms);
}

namespace {

// coll_api_test.socket runs these over TCP, which has no board.
bool overSockets() {
  const char* transport = std::getenv("COLL_TRANSPORT");
  return transport != nullptr && std::string(transport) == "socket";
}

// One argument the ranks disagree on, all else equal; rank 2 of 3 passes the
// odd value.  float32 vs int32 have the same size: the payloads agree, and
// only the signature's dtype tells the calls apart.  The reduce's roots are
// 1 and 2: the pipeline's head (the rank before the root) sends first, and
// rank 0 heads root 1's chain, so rank 2 (root 2) gets its header.  With
// roots 0 and 1 every rank would wait to receive (see the test of a reduce
// to self below).
enum class Field { Dtype, Op, BroadcastRoot, ReduceRoot };

const char* fieldName(Field f) {
  switch (f) {
    case Field::Dtype: return "dtype";
    case Field::Op: return "op";
    case Field::BroadcastRoot:
    case Field::ReduceRoot: return "root";
  }
  return "?";
}

// The field's value on `rank`, as compareSignatures prints it.
std::string fieldValue(Field f, int rank) {
  const bool odd = rank == 2;
  switch (f) {
    case Field::Dtype: return odd ? "int32" : "float32";
    case Field::Op: return odd ? "max" : "sum";
    case Field::BroadcastRoot: return odd ? "1" : "0";
    case Field::ReduceRoot: return odd ? "2" : "1";
  }
  return "?";
}

collResult_t callDisagreeing(Field f, int rank, size_t count, collComm_t comm) {
  std::vector<float> buf(count, 1.0f);
  const bool odd = rank == 2;
  switch (f) {
    case Field::Dtype:
      return collAllReduce(buf.data(), buf.data(), count, odd ? collInt32 : collFloat32, collSum, comm, nullptr);
    case Field::Op:
      return collAllReduce(buf.data(), buf.data(), count, collFloat32, odd ? collMax : collSum, comm, nullptr);
    case Field::BroadcastRoot:
      return collBroadcast(buf.data(), buf.data(), count, collFloat32, odd ? 1 : 0, comm, nullptr);
    case Field::ReduceRoot:
      return collReduce(buf.data(), buf.data(), count, collFloat32, collSum, odd ? 2 : 1, comm, nullptr);
  }
  return collInternalError;
}

// Some rank got collArgMismatch naming the field with both ranks' values,
// as "dtype int32 (rank 2) vs float32 (rank 0)".
bool namesField(const Outcome& o, const char* field, const std::function<std::string(int)>& value) {
  const int n = static_cast<int>(o.res.size());
  for (int r = 0; r < n; ++r) {
    if (o.res[r] != collArgMismatch) continue;
    for (int q = 0; q < n; ++q) {
      if (value(q) == value(r)) continue;
      const std::string want = std::string(field) + " " + value(q) + " (rank " + std::to_string(q) + ") vs " +
                               value(r) + " (rank " + std::to_string(r) + ")";
      if (o.msg[r].find(want) != std::string::npos) return true;
    }
  }
  return false;
}

}  // namespace

TEST_CASE("ranks that disagree only on dtype, op or root get an error naming it", "[api][errors]") {
  // The count decides the path: 16 floats (64 B) take the board over shared
  // memory, 1000 the FIFOs, whose every message's header is compared
  // (without COLL_CHECK: the check must not depend on it).  Over sockets
  // (coll_api_test.socket) both take the FIFOs.  A rooted call on the board
  // may end without error on a rank that reads no line (a broadcast's root,
  // a reduce's non-roots), so only the dtype and op cases need every rank
  // to fail.
  ScopedEnv t("COLL_TIMEOUT", "20s");
  ScopedEnv c("COLL_CHECK", "0");
  const Field field = GENERATE(Field::Dtype, Field::Op, Field::BroadcastRoot, Field::ReduceRoot);
  const size_t count = GENERATE(16, 1000);
  auto comms = makeComms(3);
  REQUIRE(comms.size() == 3);
  const Outcome o =
      callOnEveryRank(comms, [&](int rank, collComm_t comm) { return callDisagreeing(field, rank, count, comm); });
  CHECK(o.seconds < 5.0);
  for (int r = 0; r < 3; ++r) {
    INFO(fieldName(field) << ", count " << count << ", rank " << r << ": " << o.msg[r]);
    if (field == Field::Dtype || field == Field::Op) CHECK(o.res[r] != collSuccess);
  }
  INFO(fieldName(field) << ", count " << count << ": " << o.msg[0] << " | " << o.msg[1] << " | " << o.msg[2]);
  CHECK(namesField(o, fieldName(field), [&](int rank) { return fieldValue(field, rank); }));
  destroyComms(comms);
}

TEST_CASE("a reduce whose every rank names itself root", "[api][errors]") {
  // Each rank then only receives, so the FIFOs carry no message whose
  // header could disagree.  COLL_CHECK=1 exchanges the signatures around
  // the ring first and reports the roots at once; without it the FIFO
  // path times out, and the root's message says what to try.  On the board
  // every self-named root reads every line, so it is caught either way.
  const char* check = GENERATE("1", "0");
  const size_t count = GENERATE(16, 1000);
  const bool board = count == 16 && !overSockets();
  const bool caught = std::string(check) == "1" || board;
  ScopedEnv c("COLL_CHECK", check);
  ScopedEnv t("COLL_TIMEOUT", caught ? "20s" : "700ms");
  auto comms = makeComms(3);
  REQUIRE(comms.size() == 3);
  const Outcome o = callOnEveryRank(comms, [&](int rank, collComm_t comm) {
    std::vector<float> buf(count, 1.0f);
    return collReduce(buf.data(), buf.data(), count, collFloat32, collSum, rank, comm, nullptr);
  });
  CHECK(o.seconds < 5.0);
  for (int r = 0; r < 3; ++r) {
    INFO("COLL_CHECK=" << check << ", count " << count << ", rank " << r << ": " << o.msg[r]);
    CHECK(o.res[r] != collSuccess);
  }
  INFO("COLL_CHECK=" << check << ", count " << count << ": " << o.msg[0] << " | " << o.msg[1] << " | " << o.msg[2]);
  if (caught) {
    CHECK(namesField(o, "root", [](int rank) { return std::to_string(rank); }));
  } else {
    bool hinted = false;
    for (int r = 0; r < 3; ++r)
      hinted |= o.res[r] == collTimeout && o.msg[r].find("COLL_CHECK=1") != std::string::npos;
    CHECK(hinted);
  }
  destroyComms(comms);
}

TEST_CASE("COLL_CHECK=1 catches a count-0 call against a non-zero one", "[api][errors]") {
  ScopedEnv c("COLL_CHECK", "1");
  ScopedEnv t("COLL_TIMEOUT", "20s");
  auto comms = makeComms(3);
  REQUIRE(comms.size() == 3);
  std::vector<collResult_t> res(3);
  runRanks(comms, [&](int rank, collComm_t comm) {
    std::vector<int32_t> buf(64, 1);
    res[rank] = collBroadcast(buf.data(), buf.data(), rank == 2 ? 0 : 64, collInt32, 0, comm, nullptr);
  });
  CHECK((res[0] == collArgMismatch || res[1] == collArgMismatch || res[2] == collArgMismatch));
  for (auto r : res) CHECK(r != collSuccess);
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
