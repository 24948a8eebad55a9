// collectives_test.cc — every collective through the C API, ranks as threads.
// Values are small integers so float sums are exact in any order.
#include <catch2/catch.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstring>
#include <mutex>
#include <numeric>
#include <string>
#include <thread>
#include <vector>

#include "rank_threads.h"
#include "scoped_env.h"
#include "test_scale.h"

using colltest::destroyComms;
using colltest::makeComms;
using colltest::runRanks;

namespace {

float valueOf(int rank, size_t i) { return static_cast<float>((rank + 1) * 3 + static_cast<int>(i % 17)); }

// Collects failures from rank threads (Catch2 assertions are not thread-safe).
struct Failures {
  std::mutex mu;
  std::vector<std::string> list;
  void add(std::string s) {
    std::lock_guard<std::mutex> l(mu);
    if (list.size() < 10) list.push_back(std::move(s));
  }
};

}  // namespace

TEST_CASE("all-reduce sum of float32 is exact on every rank", "[api]") {
  int n = GENERATE(1, 2, 3, 4);
  size_t count = GENERATE(0, 1, 5, 1000, 100003);
  bool inPlace = GENERATE(false, true);
  auto comms = makeComms(n);
  REQUIRE(comms.size() == static_cast<size_t>(n));
  Failures f;
  runRanks(comms, [&](int rank, collComm_t comm) {
    std::vector<float> in(count), out(count, -1.0f);
    for (size_t i = 0; i < count; ++i) in[i] = valueOf(rank, i);
    float* dst = inPlace ? in.data() : out.data();
    collResult_t r = collAllReduce(in.data(), dst, count, collFloat32, collSum, comm, nullptr);
    if (r != collSuccess) return f.add(std::string("allreduce failed: ") + collGetLastError(comm));
    for (size_t i = 0; i < count; ++i) {
      float want = 0;
      for (int p = 0; p < n; ++p) want += valueOf(p, i);
      if (dst[i] != want) return f.add("rank " + std::to_string(rank) + " element " + std::to_string(i) + " is " +
                                       std::to_string(dst[i]) + ", want " + std::to_string(want));
    }
  });
  destroyComms(comms);
  INFO("n=" << n << " count=" << count << " inPlace=" << inPlace);
  CHECK(f.list == std::vector<std::string>{});
}

TEST_CASE("all-gather, broadcast, reduce-scatter and reduce give the expected blocks", "[api]") {
  int n = GENERATE(2, 3, 4);
  size_t count = GENERATE(1, 7, 4099);
  auto comms = makeComms(n);
  REQUIRE(comms.size() == static_cast<size_t>(n));
  Failures f;
  runRanks(comms, [&](int rank, collComm_t comm) {
    auto fail = [&](const char* what, size_t i) { f.add(std::string(what) + " rank " + std::to_string(rank) + " index " + std::to_string(i)); };
    std::vector<int32_t> in(count), out(count * n, -7);
    for (size_t i = 0; i < count; ++i) in[i] = rank * 1000 + static_cast<int32_t>(i);
    if (collAllGather(in.data(), out.data(), count, collInt32, comm, nullptr) != collSuccess) return fail("allgather error", 0);
    for (int p = 0; p < n; ++p)
      for (size_t i = 0; i < count; ++i)
        if (out[p * count + i] != p * 1000 + static_cast<int32_t>(i)) return fail("allgather", p * count + i);

    int root = n - 1;
    std::vector<int32_t> b(count, -1);
    if (rank == root) b = in;
    if (collBroadcast(b.data(), b.data(), count, collInt32, root, comm, nullptr) != collSuccess) return fail("bcast error", 0);
    for (size_t i = 0; i < count; ++i)
      if (b[i] != root * 1000 + static_cast<int32_t>(i)) return fail("broadcast", i);

    std::vector<int32_t> rsIn(count * n), rsOut(count, -1);
    for (size_t i = 0; i < rsIn.size(); ++i) rsIn[i] = rank + static_cast<int32_t>(i);
    if (collReduceScatter(rsIn.data(), rsOut.data(), count, collInt32, collSum, comm, nullptr) != collSuccess)
      return fail("reducescatter error", 0);
    for (size_t i = 0; i < count; ++i) {
      int32_t want = 0;
      for (int p = 0; p < n; ++p) want += p + static_cast<int32_t>(rank * count + i);
      if (rsOut[i] != want) return fail("reducescatter", i);
    }

    std::vector<int32_t> red(count, -5);
    if (collReduce(in.data(), red.data(), count, collInt32, collMax, 0, comm, nullptr) != collSuccess)
      return fail("reduce error", 0);
    for (size_t i = 0; i < count; ++i)
      if (red[i] != (rank == 0 ? (n - 1) * 1000 + static_cast<int32_t>(i) : -5)) return fail("reduce", i);
  });
  destroyComms(comms);
  INFO("n=" << n << " count=" << count);
  CHECK(f.list == std::vector<std::string>{});
}

namespace {
// COLL_ALGO forcing `algo` over `transport`, tiny calls through the FIFOs
// too (COLL_BOARD=0), and a 30 s timeout (a wrong result ends a rank early).
struct ForcedAlgo {
  colltest::ScopedEnv forced, medium, noBoard, timeout;
  ForcedAlgo(const char* algo, const char* transport)
      : forced("COLL_ALGO", algo),
        medium("COLL_TRANSPORT", transport),
        noBoard("COLL_BOARD", "0"),
        timeout("COLL_TIMEOUT", "30s") {}
};
}  // namespace

TEST_CASE("every algorithm COLL_ALGO can force gives the expected blocks through the executor and a transport",
          "[api][own_transport]") {
  // The schedule simulator checks every algorithm's steps; this runs them on
  // real FIFOs (COLL_BOARD=0: tiny calls too), in and out of place.
  const char* algo =
      GENERATE("allgather:ring", "allgather:oneshot", "allgather:doubling", "broadcast:pipeline", "broadcast:oneshot",
               "broadcast:tree");
  const char* transport = GENERATE("shm", "socket");
  int n = GENERATE(3, 4);
  ForcedAlgo env(algo, transport);
  auto comms = makeComms(n);
  REQUIRE(comms.size() == static_cast<size_t>(n));
  const bool gather = std::string(algo).rfind("allgather", 0) == 0;
  Failures f;
  runRanks(comms, [&](int rank, collComm_t comm) {
    for (size_t count : {size_t{1}, size_t{7}, size_t{4099}, size_t{70001}})
      for (bool inPlace : {false, true})
        for (int root : {0, n - 1}) {
          if (gather && root != 0) continue;
          auto fail = [&](const std::string& what) {
            f.add(std::string(algo) + " count " + std::to_string(count) + (inPlace ? " in place" : "") + " root " +
                  std::to_string(root) + " rank " + std::to_string(rank) + ": " + what);
          };
          auto value = [](int r, size_t i) { return r * 1000003 + static_cast<int32_t>(i); };
          std::vector<int32_t> out(gather ? count * n : count, -7), in(count);
          for (size_t i = 0; i < count; ++i) in[i] = value(rank, i);
          int32_t* send = in.data();
          if (inPlace) {
            send = gather ? out.data() + rank * count : out.data();
            std::copy(in.begin(), in.end(), send);
          }
          collResult_t r = gather ? collAllGather(send, out.data(), count, collInt32, comm, nullptr)
                                  : collBroadcast(send, out.data(), count, collInt32, root, comm, nullptr);
          if (r != collSuccess) return fail(collGetLastError(comm));
          for (size_t j = 0; j < out.size(); ++j) {
            const int src = gather ? static_cast<int>(j / count) : root;
            if (out[j] != value(src, gather ? j % count : j)) return fail("element " + std::to_string(j) + " wrong");
          }
        }
  });
  destroyComms(comms);
  INFO(algo << " over " << transport << ", n=" << n);
  CHECK(f.list == std::vector<std::string>{});
}

TEST_CASE("every all-reduce algorithm COLL_ALGO can force gives the sum through the executor and a transport",
          "[api][own_transport]") {
  // N = 5: recursive doubling folds a pair (doubling_shape.h); 3 and 4 as
  // above.  Integer sums are exact in any order; in place and not.
  const char* algo =
      GENERATE("allreduce:ring", "allreduce:tree", "allreduce:oneshot", "allreduce:doubling", "allreduce:halving");
  const char* transport = GENERATE("shm", "socket");
  int n = GENERATE(3, 4, 5);
  ForcedAlgo env(algo, transport);
  auto comms = makeComms(n);
  REQUIRE(comms.size() == static_cast<size_t>(n));
  Failures f;
  runRanks(comms, [&](int rank, collComm_t comm) {
    for (size_t count : {size_t{1}, size_t{7}, size_t{4099}, size_t{70001}})
      for (bool inPlace : {false, true}) {
        auto value = [](int r, size_t i) { return r * 1000003 + static_cast<int32_t>(i % 9973); };
        std::vector<int32_t> in(count), out(count, -7);
        for (size_t i = 0; i < count; ++i) in[i] = value(rank, i);
        int32_t* dst = inPlace ? in.data() : out.data();
        if (collAllReduce(in.data(), dst, count, collInt32, collSum, comm, nullptr) != collSuccess)
          return f.add(std::string(algo) + ": " + collGetLastError(comm));
        for (size_t i = 0; i < count; ++i) {
          int32_t want = 0;
          for (int p = 0; p < n; ++p) want += value(p, i);
          if (dst[i] != want)
            return f.add(std::string(algo) + " count " + std::to_string(count) + (inPlace ? " in place" : "") +
                         " rank " + std::to_string(rank) + ": element " + std::to_string(i) + " wrong");
        }
      }
  });
  destroyComms(comms);
  INFO(algo << " over " << transport << ", n=" << n);
  CHECK(f.list == std::vector<std::string>{});
}

TEST_CASE("every reduce-scatter algorithm COLL_ALGO can force gives each rank its block's sum",
          "[api][own_transport]") {
  // N = 5 and 6: recursive halving folds pairs (doubling_shape.h), and a
  // rank that folds in reduces in Scratch.  Integer sums are exact in any
  // order; in place and not; a pre-multiplied sum too (Scratch holds values
  // already multiplied: multiplying again would show).
  const char* algo = GENERATE("reducescatter:ring", "reducescatter:oneshot", "reducescatter:halving");
  const char* transport = GENERATE("shm", "socket");
  int n = GENERATE(3, 4, 5, 6);
  ForcedAlgo env(algo, transport);
  auto comms = makeComms(n);
  REQUIRE(comms.size() == static_cast<size_t>(n));
  Failures f;
  runRanks(comms, [&](int rank, collComm_t comm) {
    int32_t scalar = rank + 2;
    collRedOp_t premul;
    if (collRedOpCreatePreMulSum(&premul, &scalar, collInt32, collScalarHostImmediate, comm) != collSuccess)
      return f.add(collGetLastError(comm));
    for (size_t count : {size_t{1}, size_t{7}, size_t{4099}, size_t{70001}})
      for (bool inPlace : {false, true})
        for (bool pre : {false, true}) {
          // Sanitizer builds: the largest count (many chunks through each
          // link) out of place plain and in place pre-multiplied only (this
          // test case took 12 s under TSan, 7 s so).
          if (coll::testing::kSanitizedBuild && count == 70001 && inPlace != pre) continue;
          auto value = [](int r, size_t i) { return r * 1000003 + static_cast<int32_t>(i % 9973); };
          const size_t total = count * static_cast<size_t>(n);
          std::vector<int32_t> in(total), out(count, -7);
          for (size_t i = 0; i < total; ++i) in[i] = value(rank, i);
          int32_t* dst = inPlace ? in.data() + static_cast<size_t>(rank) * count : out.data();
          if (collReduceScatter(in.data(), dst, count, collInt32, pre ? premul : collSum, comm, nullptr) !=
              collSuccess)
            return f.add(std::string(algo) + ": " + collGetLastError(comm));
          for (size_t i = 0; i < count; ++i) {
            const size_t at = static_cast<size_t>(rank) * count + i;
            int32_t want = 0;
            for (int p = 0; p < n; ++p) want += (pre ? p + 2 : 1) * value(p, at);
            if (dst[i] != want)
              return f.add(std::string(algo) + " count " + std::to_string(count) + (inPlace ? " in place" : "") +
                           (pre ? " premul" : "") + " rank " + std::to_string(rank) + ": element " +
                           std::to_string(i) + " wrong");
          }
        }
    // Two calls in one group run at once: each needs its own Scratch (one
    // chunk: the second call's first round overlaps the first's last).
    const size_t count = 100, total = count * static_cast<size_t>(n);
    std::vector<int32_t> a(total), b(total), outA(count), outB(count);
    for (size_t i = 0; i < total; ++i) {
      a[i] = rank + static_cast<int32_t>(i % 7);
      b[i] = 1000 * rank - static_cast<int32_t>(i % 5);
    }
    collGroupStart();
    collReduceScatter(a.data(), outA.data(), count, collInt32, collSum, comm, nullptr);
    collReduceScatter(b.data(), outB.data(), count, collInt32, premul, comm, nullptr);
    if (collGroupEnd() != collSuccess) return f.add(std::string(algo) + " group: " + collGetLastError(comm));
    for (size_t i = 0; i < count; ++i) {
      const size_t at = static_cast<size_t>(rank) * count + i;
      int32_t wantA = 0, wantB = 0;
      for (int p = 0; p < n; ++p) {
        wantA += p + static_cast<int32_t>(at % 7);
        wantB += (p + 2) * (1000 * p - static_cast<int32_t>(at % 5));
      }
      if (outA[i] != wantA || outB[i] != wantB)
        return f.add(std::string(algo) + " group, rank " + std::to_string(rank) + ": element " + std::to_string(i) +
                     " wrong");
    }
    if (collRedOpDestroy(premul, comm) != collSuccess) f.add("destroy op failed");
  });
  destroyComms(comms);
  INFO(algo << " over " << transport << ", n=" << n);
  CHECK(f.list == std::vector<std::string>{});
}

TEST_CASE("avg and pre-multiplied sum", "[api]") {
  int n = GENERATE(2, 4);
  auto comms = makeComms(n);
  REQUIRE(comms.size() == static_cast<size_t>(n));
  Failures f;
  runRanks(comms, [&](int rank, collComm_t comm) {
    const size_t count = 1000;
    std::vector<double> in(count, static_cast<double>(rank + 1)), out(count);
    if (collAllReduce(in.data(), out.data(), count, collFloat64, collAvg, comm, nullptr) != collSuccess)
      return f.add(collGetLastError(comm));
    double want = (n + 1) / 2.0;
    if (out[0] != want || out[count - 1] != want) return f.add("avg wrong");
    std::vector<int64_t> iin(count, rank + 1), iout(count);
    if (collAllReduce(iin.data(), iout.data(), count, collInt64, collAvg, comm, nullptr) != collSuccess)
      return f.add(collGetLastError(comm));
    if (iout[5] != (n * (n + 1) / 2) / n) return f.add("int avg wrong");
    // Each rank its own scalar, as NCCL allows: sum of (rank+2)*(rank+1).
    double scalar = rank + 2;
    collRedOp_t op;
    if (collRedOpCreatePreMulSum(&op, &scalar, collFloat64, collScalarHostImmediate, comm) != collSuccess)
      return f.add(collGetLastError(comm));
    if (collAllReduce(in.data(), out.data(), count, collFloat64, op, comm, nullptr) != collSuccess)
      return f.add(collGetLastError(comm));
    double w = 0;
    for (int p = 0; p < n; ++p) w += (p + 2.0) * (p + 1.0);
    if (out[3] != w) return f.add("premulsum wrong");
    if (collRedOpDestroy(op, comm) != collSuccess) return f.add("destroy op failed");
    if (collAllReduce(in.data(), out.data(), count, collFloat64, op, comm, nullptr) != collInvalidArgument)
      return f.add("a destroyed op was accepted");
  });
  destroyComms(comms);
  CHECK(f.list == std::vector<std::string>{});
}

TEST_CASE("send/recv in a group: a ring exchange and a send to self never deadlock", "[api]") {
  int n = GENERATE(2, 3, 5);
  auto comms = makeComms(n);
  REQUIRE(comms.size() == static_cast<size_t>(n));
  Failures f;
  runRanks(comms, [&](int rank, collComm_t comm) {
    const size_t count = 300000;  // several chunks: both directions in flight at once
    std::vector<int32_t> a(count, rank), fromLeft(count, -1), fromRight(count, -1), self(count, -1);
    int right = (rank + 1) % n, left = (rank - 1 + n) % n;
    collGroupStart();
    collSend(a.data(), count, collInt32, right, comm, nullptr);
    collSend(a.data(), count, collInt32, left, comm, nullptr);
    collRecv(fromLeft.data(), count, collInt32, left, comm, nullptr);
    collRecv(fromRight.data(), count, collInt32, right, comm, nullptr);
    collSend(a.data(), count, collInt32, rank, comm, nullptr);
    collRecv(self.data(), count, collInt32, rank, comm, nullptr);
    if (collGroupEnd() != collSuccess) return f.add(collGetLastError(comm));
    if (n == 2) {
      // left == right: two messages from the same peer arrive in call order.
      if (fromLeft[7] != left || fromRight[count - 1] != right) return f.add("n=2 exchange wrong");
    } else if (fromLeft[count - 1] != left || fromRight[0] != right) {
      return f.add("ring exchange wrong on rank " + std::to_string(rank));
    }
    if (self[count / 2] != rank) return f.add("self send wrong");
  });
  destroyComms(comms);
  CHECK(f.list == std::vector<std::string>{});
}

TEST_CASE("a send and a receive on one buffer in a group (nccl-tests' in-place send/recv) send the old bytes",
          "[api][own_transport]") {
  // Zero-copy sends read the buffer when the bytes leave and early landings
  // write it before their step: both must stay off a buffer another op of
  // the group uses.  16 MiB: many chunks in flight each way.
  const char* transport = GENERATE("shm", "socket");
  colltest::ScopedEnv medium("COLL_TRANSPORT", transport);
  colltest::ScopedEnv timeout("COLL_TIMEOUT", "30s");
  auto comms = makeComms(2);
  REQUIRE(comms.size() == 2);
  Failures f;
  runRanks(comms, [&](int rank, collComm_t comm) {
    const size_t count = size_t{4} << 20;
    auto value = [](int r, size_t i) { return static_cast<int32_t>(r * 1000003 + static_cast<int32_t>(i)); };
    std::vector<int32_t> buf(count);
    for (int round = 0; round < 3; ++round) {
      for (size_t i = 0; i < count; ++i) buf[i] = value(rank + 2 * round, i);
      const int peer = 1 - rank;
      collGroupStart();
      collSend(buf.data(), count, collInt32, peer, comm, nullptr);
      collRecv(buf.data(), count, collInt32, peer, comm, nullptr);
      if (collGroupEnd() != collSuccess) return f.add(collGetLastError(comm));
      for (size_t i = 0; i < count; ++i)
        if (buf[i] != value(peer + 2 * round, i))
          return f.add(std::string(transport) + " rank " + std::to_string(rank) + " round " + std::to_string(round) +
                       ": element " + std::to_string(i) + " wrong");
    }
  });
  destroyComms(comms);
  CHECK(f.list == std::vector<std::string>{});
}

TEST_CASE("collectives in one group run together and stay in order", "[api]") {
  auto comms = makeComms(3);
  REQUIRE(comms.size() == 3);
  Failures f;
  runRanks(comms, [&](int rank, collComm_t comm) {
    std::vector<float> a(5000, 1.0f), b(70000, 2.0f), c(3, 3.0f);
    collGroupStart();
    collAllReduce(a.data(), a.data(), a.size(), collFloat32, collSum, comm, nullptr);
    collGroupStart();  // nested: only the outermost End runs
    collAllReduce(b.data(), b.data(), b.size(), collFloat32, collSum, comm, nullptr);
    collGroupEnd();
    collAllReduce(c.data(), c.data(), c.size(), collFloat32, collMax, comm, nullptr);
    if (collGroupEnd() != collSuccess) return f.add(collGetLastError(comm));
    if (a[4999] != 3.0f || b[12345] != 6.0f || c[2] != 3.0f) return f.add("group results wrong on rank " + std::to_string(rank));
  });
  destroyComms(comms);
  CHECK(f.list == std::vector<std::string>{});
}

TEST_CASE("one thread drives several communicators in one group", "[api]") {
  auto comms = makeComms(3);
  REQUIRE(comms.size() == 3);
  std::vector<std::vector<int64_t>> bufs(3, std::vector<int64_t>(10000));
  for (int r = 0; r < 3; ++r) std::fill(bufs[r].begin(), bufs[r].end(), r + 1);
  collGroupStart();
  for (int r = 0; r < 3; ++r) collAllReduce(bufs[r].data(), bufs[r].data(), 10000, collInt64, collProd, comms[r], nullptr);
  REQUIRE(collGroupEnd() == collSuccess);
  for (int r = 0; r < 3; ++r) CHECK(bufs[r][9999] == 6);
  destroyComms(comms);
}

TEST_CASE("board calls (tiny all-reduces, reduces, broadcasts, all-gathers) interleaved, at and past the limit",
          "[api]") {
  // Calls whose every rank's part is at most 256 B go through the shared
  // memory board (executor/board_collectives.h), one line per rank and call;
  // a broadcast's root and a reduce's non-roots return without waiting for
  // every rank, so a fast rank may run up to 15 calls ahead and must not
  // rewrite a line a slow rank still reads.  Sizes at the limit (256 B) and
  // just past it (260 B, through the FIFOs) alternate, in and out of place;
  // every result is checked.  COLL_CHECK=1 makes every board call read
  // every line (CI runs with it, so both ways are run here).
  const char* check = GENERATE("0", "1");
  colltest::ScopedEnv env("COLL_CHECK", check);
  int n = GENERATE(2, 3, 4);
  auto comms = makeComms(n);
  REQUIRE(comms.size() == static_cast<size_t>(n));
  Failures f;
  runRanks(comms, [&](int rank, collComm_t comm) {
    auto failed = [&](const char* what, int it) {
      f.add(std::string(what) + " (iteration " + std::to_string(it) + "): " + collGetLastError(comm));
    };
    for (int it = 0; it < 300; ++it) {
      const bool past = it % 3 == 2;  // every third iteration just past the board's limit
      double d[5];
      for (int k = 0; k < 5; ++k) d[k] = rank + it + k;
      if (collAllReduce(d, d, 5, collFloat64, collSum, comm, nullptr) != collSuccess) return failed("allreduce", it);
      for (int k = 0; k < 5; ++k)
        if (d[k] != n * (it + k) + n * (n - 1) / 2.0)
          return f.add("iteration " + std::to_string(it) + ": double all-reduce gave " + std::to_string(d[k]));

      const int root = it % n;
      const size_t bc = past ? 65 : 64;  // int32: 256 B on the board, 260 B through the FIFOs
      int32_t b[65], bo[65];
      for (size_t k = 0; k < bc; ++k) b[k] = rank == root ? static_cast<int32_t>(it * 100 + k) : -1;
      std::fill(bo, bo + 65, -2);
      const bool inPlace = it % 2 == 0;
      if (collBroadcast(b, inPlace ? b : bo, bc, collInt32, root, comm, nullptr) != collSuccess)
        return failed("broadcast", it);
      for (size_t k = 0; k < bc; ++k)
        if ((inPlace ? b : bo)[k] != static_cast<int32_t>(it * 100 + k))
          return f.add("iteration " + std::to_string(it) + ": broadcast gave " + std::to_string((inPlace ? b : bo)[k]));

      int8_t m[3] = {static_cast<int8_t>(rank), static_cast<int8_t>(-rank), static_cast<int8_t>(it % 100)};
      if (collAllReduce(m, m, 3, collInt8, collMax, comm, nullptr) != collSuccess) return failed("allreduce max", it);
      if (m[0] != n - 1 || m[1] != 0 || m[2] != it % 100)
        return f.add("iteration " + std::to_string(it) + ": int8 max gave " + std::to_string(m[0]) + "," +
                     std::to_string(m[1]) + "," + std::to_string(m[2]));

      // Each rank's part: 128 float16 = 256 B on the board, or 130 past it.
      const size_t gc = past ? 130 : 128;
      std::vector<uint16_t> g(gc * n, 0xffff);
      for (size_t k = 0; k < gc; ++k) g[rank * gc + k] = static_cast<uint16_t>(rank * 1000 + it + k);
      const uint16_t* send = g.data() + rank * gc;  // in place
      std::vector<uint16_t> mine(send, send + gc), go(gc * n, 0xffff);
      if (collAllGather(inPlace ? send : mine.data(), inPlace ? g.data() : go.data(), gc, collFloat16, comm, nullptr) !=
          collSuccess)
        return failed("allgather", it);
      const std::vector<uint16_t>& got = inPlace ? g : go;
      for (int q = 0; q < n; ++q)
        for (size_t k = 0; k < gc; ++k)
          if (got[q * gc + k] != static_cast<uint16_t>(q * 1000 + it + k))
            return f.add("iteration " + std::to_string(it) + ": all-gather gave " + std::to_string(got[q * gc + k]) +
                         " for rank " + std::to_string(q));

      const int rroot = (it + 1) % n;
      const size_t rc = past ? 65 : 64;  // float32
      float r[65], ro[65];
      for (size_t k = 0; k < rc; ++k) r[k] = static_cast<float>(rank + k);
      std::fill(ro, ro + 65, -1.0f);
      if (collReduce(r, inPlace ? r : ro, rc, collFloat32, collSum, rroot, comm, nullptr) != collSuccess)
        return failed("reduce", it);
      if (rank == rroot)
        for (size_t k = 0; k < rc; ++k)
          if ((inPlace ? r : ro)[k] != static_cast<float>(n * k + n * (n - 1) / 2))
            return f.add("iteration " + std::to_string(it) + ": reduce gave " + std::to_string((inPlace ? r : ro)[k]));
    }
    // Bursts of calls that let a rank run ahead (more than the board has
    // lines), while the rank they wait for sleeps now and then: broadcasts
    // from rank 0 with rank n-1 slow, then reduces to a slow rank 0.
    for (int it = 0; it < 64; ++it) {
      if (rank == n - 1 && it % 16 == 0) std::this_thread::sleep_for(std::chrono::milliseconds(3));
      int32_t v[4];
      for (int k = 0; k < 4; ++k) v[k] = rank == 0 ? it * 7 + k : -1;
      if (collBroadcast(v, v, 4, collInt32, 0, comm, nullptr) != collSuccess) return failed("burst broadcast", it);
      for (int k = 0; k < 4; ++k)
        if (v[k] != it * 7 + k)
          return f.add("burst " + std::to_string(it) + ": broadcast gave " + std::to_string(v[k]));
    }
    for (int it = 0; it < 64; ++it) {
      if (rank == 0 && it % 16 == 0) std::this_thread::sleep_for(std::chrono::milliseconds(3));
      float v[4];
      for (int k = 0; k < 4; ++k) v[k] = static_cast<float>(rank * it + k);
      if (collReduce(v, v, 4, collFloat32, collSum, 0, comm, nullptr) != collSuccess) return failed("burst reduce", it);
      if (rank == 0)
        for (int k = 0; k < 4; ++k)
          if (v[k] != static_cast<float>(it * n * (n - 1) / 2 + n * k))
            return f.add("burst " + std::to_string(it) + ": reduce gave " + std::to_string(v[k]));
    }
  });
  destroyComms(comms);
  INFO("n=" << n << " COLL_CHECK=" << check);
  CHECK(f.list == std::vector<std::string>{});
}
