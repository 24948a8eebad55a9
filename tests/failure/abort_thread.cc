// abort_thread.cc — collCommAbort from a second thread, with a real peer
// process (tests/api/errors_test.cc has the in-process variant, ranks as
// threads).  Run under collrun with 2 ranks.
//
// Rank 1 inits and never calls the collective: it sleeps.  Rank 0 starts an
// all-reduce, which must block (its peer is missing); a second thread of
// rank 0 calls collCommAbort 500 ms later.  Rank 0 checks that:
//   - the all-reduce did not return before the abort,
//   - it returned collAborted within 100 ms of the collCommAbort call,
//   - collCommGetAsyncError says collAborted, and a later call fails,
//   - collCommDestroy returns.
// Rank 1 then wakes (2 s), calls the all-reduce its peer has given up on:
// that must fail (rank 0 aborted and is gone), not hang, and destroy must
// return.
//
// Usage: abort_thread [ABORT_AFTER_MS] [MAX_LATENCY_MS]   (500, 100)
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

#include "coll.h"

namespace {

using Clock = std::chrono::steady_clock;

double msBetween(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration<double, std::milli>(b - a).count();
}

int rankZero(collComm_t comm, int abortAfterMs, double maxLatencyMs) {
  std::vector<float> buf(size_t{1} << 20, 1.0f);
  std::atomic<bool> returned{false};
  std::atomic<int64_t> abortAtNs{0};
  collResult_t abortResult = collSuccess;
  std::thread aborter([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(abortAfterMs));
    abortAtNs.store(Clock::now().time_since_epoch().count());
    abortResult = collCommAbort(comm);
  });
  const Clock::time_point t0 = Clock::now();
  collResult_t r = collAllReduce(buf.data(), buf.data(), buf.size(), collFloat32, collSum, comm, nullptr);
  const Clock::time_point tRet = Clock::now();
  returned = true;
  const std::string msg = collGetLastError(comm);
  aborter.join();
  const Clock::time_point abortAt{Clock::duration(abortAtNs.load())};
  const double latencyMs = msBetween(abortAt, tRet);
  printf("rank 0: all-reduce returned %d (%s) %.1f ms after start, %.2f ms after collCommAbort: %s\n",
         static_cast<int>(r), collGetErrorString(r), msBetween(t0, tRet), latencyMs, msg.c_str());

  bool ok = true;
  auto expect = [&](bool cond, const std::string& what) {
    if (!cond) {
      printf("rank 0: FAIL: %s\n", what.c_str());
      ok = false;
    }
  };
  expect(abortResult == collSuccess, "collCommAbort returned " + std::to_string(abortResult));
  expect(abortAtNs.load() != 0 && tRet >= abortAt, "the all-reduce returned before collCommAbort was called");
  expect(r == collAborted, "the all-reduce returned " + std::string(collGetErrorString(r)) + ", not collAborted");
  expect(latencyMs <= maxLatencyMs,
         "returned " + std::to_string(latencyMs) + " ms after the abort (limit " + std::to_string(maxLatencyMs) + ")");
  collResult_t async = collSuccess;
  expect(collCommGetAsyncError(comm, &async) == collSuccess, "collCommGetAsyncError failed");
  expect(async == collAborted, "collCommGetAsyncError says " + std::string(collGetErrorString(async)));
  collResult_t later = collAllReduce(buf.data(), buf.data(), 4, collFloat32, collSum, comm, nullptr);
  printf("rank 0: a later call returned %d: %s\n", static_cast<int>(later), collGetLastError(comm));
  expect(later != collSuccess, "a call after collCommAbort succeeded");
  const Clock::time_point d0 = Clock::now();
  collResult_t d = collCommDestroy(comm);
  printf("rank 0: collCommDestroy returned %d after %.1f ms\n", static_cast<int>(d), msBetween(d0, Clock::now()));
  expect(d == collSuccess, "collCommDestroy failed");
  printf("rank 0: %s\n", ok ? "PASS" : "FAILED");
  return ok ? 0 : 1;
}

int rankOne(collComm_t comm) {
  // Never joins rank 0's all-reduce while it is waiting.
  sleep(2);
  std::vector<float> buf(size_t{1} << 20, 1.0f);
  const Clock::time_point t0 = Clock::now();
  collResult_t r = collAllReduce(buf.data(), buf.data(), buf.size(), collFloat32, collSum, comm, nullptr);
  const double ms = msBetween(t0, Clock::now());
  printf("rank 1: all-reduce after the peer's abort returned %d (%s) after %.1f ms: %s\n", static_cast<int>(r),
         collGetErrorString(r), ms, collGetLastError(comm));
  bool ok = r != collSuccess && ms < 10'000;
  if (!ok) printf("rank 1: FAIL: a call on a comm whose peer aborted must fail within 10 s\n");
  collCommDestroy(comm);
  printf("rank 1: collCommDestroy returned; %s\n", ok ? "PASS" : "FAILED");
  return ok ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  setvbuf(stdout, nullptr, _IOLBF, 0);
  const int abortAfterMs = argc > 1 ? atoi(argv[1]) : 500;
  const double maxLatencyMs = argc > 2 ? atof(argv[2]) : 100.0;
  collComm_t comm = nullptr;
  if (collCommInitFromEnv(&comm) != collSuccess) {
    fprintf(stderr, "init failed: %s\n", collGetLastError(nullptr));
    return 1;
  }
  int rank = 0, n = 0;
  collCommUserRank(comm, &rank);
  collCommCount(comm, &n);
  if (n != 2) {
    fprintf(stderr, "abort_thread needs exactly 2 ranks, got %d\n", n);
    collCommDestroy(comm);
    return 2;
  }
  return rank == 0 ? rankZero(comm, abortAfterMs, maxLatencyMs) : rankOne(comm);
}
