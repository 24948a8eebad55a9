// device_stream_ops.h — how many operations the device path's stream-op way
// (libcoll/src/device/device_collectives.cc) queues on the caller's stream
// for one call, as a pure function, and the budget past which a call takes
// the program kernel (schedule/device_program.h) instead.
//
// Why a budget: a CUDA stream holds about a thousand queued operations (an
// H200 took 1021 kernels or copies behind a held stream), and past that the
// enqueue itself blocks until the GPU catches up.  The stream-op way queues
// a fixed sequence per piece of at most one staging region, so a call of
// many pieces (a large call, a small COLL_DEVICE_STAGE_BYTES, many ranks)
// would make its caller wait behind a busy stream; the program kernel runs
// up to kMaxProgramSteps steps (many pieces) per launch.  The budget is a
// quarter of that depth, so several calls still fit behind a busy stream.
#pragma once

#include <cstddef>
#include <cstdint>

#include "schedule/device_group_plan.h"

namespace coll::sched {

constexpr uint64_t kDeviceStreamOpBudget = 256;

// The sizes the stream-op way cuts by (the device path's own settings).
struct DeviceStreamShape {
  int nranks = 1;
  size_t regionBytes = 0;     // a staging region (COLL_DEVICE_STAGE_BYTES)
  size_t oneLaunchBytes = 0;  // all-reduces and reduces up to this size: one launch
};

// The most operations call c queues on any rank (every rank computes the
// same, so they pick the same way).  Send/recv: one kernel.  A call the
// stream-op way refuses (a reduce-scatter whose region holds fewer than
// nranks elements) counts 0.
uint64_t deviceStreamOps(const DeviceGroupCall& c, const DeviceStreamShape& shape);

// COLL_DEVICE_PROGRAM=auto: whether call c takes the program kernel — past
// the budget above, or an all-reduce of 2 to 4 ranks between the one-launch
// size and kProgramAutoMaxBytes, where the program kernel measured faster
// than the stream operations (docs/PERFORMANCE.md, "CUDA device
// collectives (H200 ...)": the program kernel against the default).  Every
// rank computes the same, so all pick the same way.
constexpr uint64_t kProgramAutoMaxBytes = uint64_t{8} << 20;
bool programByDefault(const DeviceGroupCall& c, const DeviceStreamShape& shape);

}  // namespace coll::sched
