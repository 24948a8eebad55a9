// mismatch_test.cc — ranks that call with different arguments get
// collArgMismatch naming the argument and both values, on the board and
// the FIFOs, over shm and (coll_api_test.socket) sockets, never a hang.
#include <catch2/catch.hpp>

#include <cstdint>
#include <cstdlib>
#include <functional>
#include <string>
#include <vector>

#include "every_rank.h"
#include "rank_threads.h"
#include "scoped_env.h"

using colltest::callOnEveryRank;
using colltest::destroyComms;
using colltest::makeComms;
using colltest::Outcome;
using colltest::runRanks;
using colltest::ScopedEnv;
using Catch::Matchers::Contains;

namespace {

// coll_api_test.socket runs these over TCP, which has no board.
bool overSockets() {
  const char* transport = std::getenv("COLL_TRANSPORT");
  return transport != nullptr && std::string(transport) == "socket";
}

}  // namespace

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
  const bool board = !overSockets();
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

