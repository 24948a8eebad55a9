// The device group plan: which calls share one launch of the one-launch
// kernel (schedule/device_group_plan.h).  Runs on every machine: the plan is
// a pure function; the kernel it drives is tested on a GPU (tests/gpu).
#include <catch2/catch.hpp>

#include <vector>

#include "schedule/device_group_plan.h"

using coll::sched::CollKind;
using coll::sched::DeviceGroupCall;
using coll::sched::DeviceGroupRun;
using coll::sched::planDeviceGroup;

namespace {

constexpr size_t kSlot = 32 << 10;
constexpr int kMax = 32;

DeviceGroupCall f32(size_t count, CollKind k = CollKind::AllReduce) {
  DeviceGroupCall c;
  c.kind = k;
  c.count = count;
  c.elemSize = 4;
  c.dtype = 7;
  return c;
}

// The plan as (first, calls, fused) triples.
std::vector<std::vector<size_t>> shape(const std::vector<DeviceGroupRun>& runs) {
  std::vector<std::vector<size_t>> out;
  for (const auto& r : runs) out.push_back({r.first, r.calls, r.fused ? 1u : 0u});
  return out;
}

}  // namespace

TEST_CASE("small all-reduces and reduces of one kind share a launch", "[device_group]") {
  const std::vector<DeviceGroupCall> calls = {f32(1), f32(7), f32(100, CollKind::Reduce), f32(1031), f32(3000)};
  const auto runs = planDeviceGroup(calls, 4, kSlot, kMax);
  REQUIRE(shape(runs) == std::vector<std::vector<size_t>>{{0, 5, 1}});
  // 16-byte aligned, packed in call order.
  CHECK(runs[0].offsets == std::vector<size_t>{0, 16, 48, 448, 4576});
  CHECK(runs[0].offsets.back() + 3000 * 4 <= kSlot);
}

TEST_CASE("a call that cannot join breaks the run", "[device_group]") {
  std::vector<DeviceGroupCall> calls = {f32(5), f32(6), f32(100000), f32(5), f32(2048), f32(64)};
  CHECK(shape(planDeviceGroup(calls, 2, kSlot, kMax)) ==
        std::vector<std::vector<size_t>>{{0, 2, 1}, {2, 1, 0}, {3, 3, 1}});
  SECTION("other collectives, pre-mul, count 0") {
    calls = {f32(5), f32(5, CollKind::AllGather), f32(5), f32(5), f32(0), f32(5)};
    calls[3].premul = true;
    CHECK(shape(planDeviceGroup(calls, 2, kSlot, kMax)) ==
          std::vector<std::vector<size_t>>{{0, 1, 0}, {1, 1, 0}, {2, 1, 0}, {3, 1, 0}, {4, 1, 0}, {5, 1, 0}});
  }
  SECTION("another dtype, op, divisor or stream starts a new run") {
    calls = {f32(5), f32(5), f32(5), f32(5), f32(5), f32(5), f32(5), f32(5)};
    calls[2].dtype = 9;
    calls[2].elemSize = 2;
    calls[3].dtype = 9;
    calls[3].elemSize = 2;
    calls[4].op = 2;
    calls[5].divisor = 4;
    static int streamA, streamB;
    calls[6].stream = &streamA;
    calls[7].stream = &streamB;
    CHECK(shape(planDeviceGroup(calls, 2, kSlot, kMax)) ==
          std::vector<std::vector<size_t>>{{0, 2, 1}, {2, 2, 1}, {4, 1, 0}, {5, 1, 0}, {6, 1, 0}, {7, 1, 0}});
  }
}

TEST_CASE("a call on memory an earlier call of the run touches starts a new run", "[device_group]") {
  // Each call's buffers, in place: calls 1 and 3 work on call 0's and 2's.
  std::vector<DeviceGroupCall> calls = {f32(8), f32(8), f32(8), f32(8), f32(8)};
  const uintptr_t buf[] = {1000, 1000, 2000, 2000, 3000};
  for (size_t i = 0; i < calls.size(); ++i) calls[i].memory.send = calls[i].memory.recv = {buf[i], buf[i] + 32};
  CHECK(shape(planDeviceGroup(calls, 2, kSlot, kMax)) ==
        std::vector<std::vector<size_t>>{{0, 1, 0}, {1, 2, 1}, {3, 2, 1}});
  SECTION("a write over what an earlier call reads") {
    calls = {f32(8), f32(8)};
    calls[0].memory.send = {1000, 1032};
    calls[0].memory.recv = {2000, 2032};
    calls[1].memory.send = {3000, 3032};
    calls[1].memory.recv = {1016, 1048};
    CHECK(shape(planDeviceGroup(calls, 2, kSlot, kMax)) == std::vector<std::vector<size_t>>{{0, 1, 0}, {1, 1, 0}});
  }
}

TEST_CASE("a run stops where the slot or the call limit is full", "[device_group]") {
  // 12 KiB each: two fit in 32 KiB, the third starts a new run.
  const std::vector<DeviceGroupCall> big = {f32(3072), f32(3072), f32(3072), f32(3072), f32(3072)};
  CHECK(shape(planDeviceGroup(big, 2, kSlot, kMax)) ==
        std::vector<std::vector<size_t>>{{0, 2, 1}, {2, 2, 1}, {4, 1, 0}});
  // A call of exactly one slot fits alone; one element more does not fuse.
  CHECK(shape(planDeviceGroup({f32(kSlot / 4), f32(1)}, 2, kSlot, kMax)) ==
        std::vector<std::vector<size_t>>{{0, 1, 0}, {1, 1, 0}});
  std::vector<DeviceGroupCall> many(40, f32(1));
  const auto runs = planDeviceGroup(many, 2, kSlot, kMax);
  CHECK(shape(runs) == std::vector<std::vector<size_t>>{{0, 32, 1}, {32, 8, 1}});
  for (const auto& r : runs)
    for (size_t k = 0; k < r.offsets.size(); ++k) CHECK(r.offsets[k] == 16 * k);
}

TEST_CASE("one rank fuses nothing; every call is planned exactly once", "[device_group]") {
  const std::vector<DeviceGroupCall> calls = {f32(1), f32(2), f32(3)};
  CHECK(shape(planDeviceGroup(calls, 1, kSlot, kMax)) ==
        std::vector<std::vector<size_t>>{{0, 1, 0}, {1, 1, 0}, {2, 1, 0}});
  CHECK(planDeviceGroup({}, 4, kSlot, kMax).empty());
  std::vector<DeviceGroupCall> mixed;
  for (size_t i = 0; i < 100; ++i) mixed.push_back(f32(i % 7 == 0 ? 20000 : i % 13, i % 5 ? CollKind::AllReduce : CollKind::Reduce));
  size_t next = 0;
  for (const auto& r : planDeviceGroup(mixed, 3, kSlot, kMax)) {
    CHECK(r.first == next);
    CHECK(r.calls >= 1);
    CHECK(r.fused == (r.calls >= 2));
    CHECK(r.offsets.size() == (r.fused ? r.calls : 0));
    next += r.calls;
  }
  CHECK(next == mixed.size());
}

TEST_CASE("program runs: one per stream and reduction type; copies join any", "[device_group]") {
  using coll::sched::groupWantsSmallKernel;
  using coll::sched::planProgramRuns;
  int s1 = 0, s2 = 0;
  auto on = [](DeviceGroupCall c, const void* stream, int dtype = 7, int op = 0) {
    c.stream = stream;
    c.dtype = dtype;
    c.op = op;
    return c;
  };
  // Two all-reduces of one type, an all-gather (any type), then a
  // different op, then another stream.
  const std::vector<DeviceGroupCall> calls = {
      on(f32(1 << 20), &s1), on(f32(5), &s1), on(f32(100, CollKind::AllGather), &s1, 3),
      on(f32(10, CollKind::ReduceScatter), &s1, 7, 2), on(f32(10, CollKind::Broadcast), &s1, 1),
      on(f32(10), &s2)};
  CHECK(shape(planProgramRuns(calls, kMax)) ==
        std::vector<std::vector<size_t>>{{0, 3, 1}, {3, 2, 1}, {5, 1, 1}});
  // A copy-only run takes the first reducing call's type when one follows.
  const std::vector<DeviceGroupCall> copiesFirst = {on(f32(9, CollKind::AllGather), &s1, 3),
                                                    on(f32(9, CollKind::Reduce), &s1, 7, 1),
                                                    on(f32(9, CollKind::AllReduce), &s1, 7, 1)};
  CHECK(shape(planProgramRuns(copiesFirst, kMax)) == std::vector<std::vector<size_t>>{{0, 3, 1}});
  // At most maxCalls per run; every call planned once.
  std::vector<DeviceGroupCall> many(70, on(f32(3), &s1));
  CHECK(shape(planProgramRuns(many, 32)) == std::vector<std::vector<size_t>>{{0, 32, 1}, {32, 32, 1}, {64, 6, 1}});
  CHECK(planProgramRuns({}, kMax).empty());

  CHECK(groupWantsSmallKernel({f32(5), f32(7, CollKind::Reduce)}, 2, kSlot));
  CHECK_FALSE(groupWantsSmallKernel({f32(5), f32(kSlot)}, 2, kSlot));  // one too large
  CHECK_FALSE(groupWantsSmallKernel({f32(5, CollKind::AllGather)}, 2, kSlot));
  CHECK(groupWantsSmallKernel({f32(kSlot)}, 1, kSlot));  // one rank: nothing to exchange
}
