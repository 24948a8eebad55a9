// The stream operations the device path's stream-op way queues per call
// (schedule/device_stream_ops.h), which decide when a call takes the
// program kernel instead.  The counts are checked by hand here, against
// device_collectives.cc's sequence per piece; the GPU test checks them
// against the emulated runtime's queue (tests/gpu: every call's stream
// operations stay within the budget).
#include <catch2/catch.hpp>

#include "schedule/device_stream_ops.h"

using coll::sched::CollKind;
using coll::sched::DeviceGroupCall;
using coll::sched::deviceStreamOps;
using coll::sched::DeviceStreamShape;
using coll::sched::kDeviceStreamOpBudget;

namespace {

constexpr size_t kKiB = 1024, kMiB = 1024 * kKiB;

DeviceGroupCall groupCall(CollKind k, uint64_t count, uint32_t es = 4, bool premul = false) {
  DeviceGroupCall c;
  c.kind = k;
  c.count = count;
  c.elemSize = es;
  c.premul = premul;
  return c;
}

DeviceStreamShape shape(int nranks, size_t region) { return {nranks, region, 32 * kKiB}; }

}  // namespace

TEST_CASE("one-launch calls and send/recv are one operation", "[device_stream_ops]") {
  for (int n : {1, 2, 8}) {
    CHECK(deviceStreamOps(groupCall(CollKind::AllReduce, 8 * kKiB), shape(n, 64 * kKiB)) == 1);
    CHECK(deviceStreamOps(groupCall(CollKind::Reduce, 8 * kKiB), shape(n, 64 * kKiB)) == 1);
    CHECK(deviceStreamOps(groupCall(CollKind::Send, 1 << 30), shape(n, 64 * kKiB)) == 1);
  }
  // One rank: a single reduction, whatever the size.
  CHECK(deviceStreamOps(groupCall(CollKind::AllReduce, 1 << 28), shape(1, 64 * kKiB)) == 1);
  CHECK(deviceStreamOps(groupCall(CollKind::AllReduce, 0), shape(4, 64 * kKiB)) == 1);
}

TEST_CASE("all-reduce: N + 2 per one-shot piece, 2N + 3 per two-phase piece", "[device_stream_ops]") {
  // 1 MiB of floats through 64 KiB regions at N = 3: 16 one-shot pieces.
  CHECK(deviceStreamOps(groupCall(CollKind::AllReduce, 256 * kKiB), shape(3, 64 * kKiB)) == 16 * 5);
  // 4 MiB regions: pieces above 256 KiB go two-phase; 10 MiB = 2 full
  // pieces + one of 2 MiB.
  CHECK(deviceStreamOps(groupCall(CollKind::AllReduce, 10 * kMiB / 4), shape(4, 4 * kMiB)) == 3 * 11);
  // A last piece small enough for one-shot: 4 MiB + 128 KiB.
  CHECK(deviceStreamOps(groupCall(CollKind::AllReduce, (4 * kMiB + 128 * kKiB) / 4), shape(2, 4 * kMiB)) == 7 + 4);
  // One element past a region is a second piece (of one element: one-shot).
  CHECK(deviceStreamOps(groupCall(CollKind::AllReduce, 64 * kKiB / 2 + 1, 2), shape(2, 64 * kKiB)) == 4 + 4);
}

TEST_CASE("all-gather, broadcast, reduce and reduce-scatter per piece", "[device_stream_ops]") {
  const DeviceStreamShape s = shape(4, 64 * kKiB);  // 16 Ki floats per region
  CHECK(deviceStreamOps(groupCall(CollKind::AllGather, 32 * kKiB), s) == 2 * 7);
  CHECK(deviceStreamOps(groupCall(CollKind::Broadcast, 32 * kKiB + 1), s) == 3 * 4);
  CHECK(deviceStreamOps(groupCall(CollKind::Reduce, 32 * kKiB), s) == 2 * 6);
  // Reduce-scatter: a region holds a piece of every rank's block (4 Ki
  // floats each); a strided copy, or one pre-multiply per block.
  CHECK(deviceStreamOps(groupCall(CollKind::ReduceScatter, 8 * kKiB), s) == 2 * 6);
  CHECK(deviceStreamOps(groupCall(CollKind::ReduceScatter, 8 * kKiB, 4, true), s) == 2 * 9);
  // A region smaller than one element per rank: the stream-op way refuses it.
  CHECK(deviceStreamOps(groupCall(CollKind::ReduceScatter, 100), shape(8, 16)) == 0);
}

TEST_CASE("the budget: default regions keep benchmark sizes on stream operations", "[device_stream_ops]") {
  // 32 MiB regions (COLL_DEVICE_STAGE_BYTES' default): 256 MiB stays on the
  // stream-op way up to 8 ranks, several GiB do not.
  for (int n : {2, 4, 8}) {
    CHECK(deviceStreamOps(groupCall(CollKind::AllReduce, 64 * kMiB), shape(n, 32 * kMiB)) <= kDeviceStreamOpBudget);
    CHECK(deviceStreamOps(groupCall(CollKind::AllReduce, 1024 * kMiB), shape(n, 32 * kMiB)) > kDeviceStreamOpBudget);
  }
  // Small regions pass it early: 4 MiB through 64 KiB regions at N = 3.
  CHECK(deviceStreamOps(groupCall(CollKind::AllReduce, kMiB), shape(3, 64 * kKiB)) > kDeviceStreamOpBudget);
}

TEST_CASE("auto: mid-size all-reduces of 2-4 ranks and calls past the budget take the program kernel",
          "[device_stream_ops]") {
  using coll::sched::kProgramAutoMaxBytes;
  using coll::sched::programByDefault;
  const auto ar = [](uint64_t bytes) { return groupCall(CollKind::AllReduce, bytes / 4); };
  for (int n : {2, 3, 4}) {
    INFO("nranks " << n);
    CHECK_FALSE(programByDefault(ar(32 * kKiB), shape(n, 32 * kMiB)));  // one launch
    CHECK(programByDefault(ar(32 * kKiB + 4), shape(n, 32 * kMiB)));
    CHECK(programByDefault(ar(2 * kMiB), shape(n, 32 * kMiB)));
    CHECK(programByDefault(ar(kProgramAutoMaxBytes), shape(n, 32 * kMiB)));
    CHECK_FALSE(programByDefault(ar(kProgramAutoMaxBytes + 4), shape(n, 32 * kMiB)));
    // Other collectives keep the stream operations in the window.
    CHECK_FALSE(programByDefault(groupCall(CollKind::AllGather, 512 * kKiB), shape(n, 32 * kMiB)));
    CHECK_FALSE(programByDefault(groupCall(CollKind::Broadcast, 512 * kKiB), shape(n, 32 * kMiB)));
  }
  CHECK_FALSE(programByDefault(ar(2 * kMiB), shape(8, 32 * kMiB)));  // not compared at N = 8
  CHECK_FALSE(programByDefault(ar(2 * kMiB), shape(1, 32 * kMiB)));
  // Past the budget, whatever the kind and size: 1 GiB in 64 KiB regions.
  const coll::sched::DeviceGroupCall big = groupCall(CollKind::AllGather, (1ull << 30) / 4);
  REQUIRE(deviceStreamOps(big, shape(8, 64 * kKiB)) > kDeviceStreamOpBudget);
  CHECK(programByDefault(big, shape(8, 64 * kKiB)));
}
