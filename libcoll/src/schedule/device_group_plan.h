// device_group_plan.h — which calls of a device group share one launch of
// the one-launch kernel (libcoll/src/device), as a pure function.
//
// A group's calls on one communicator, in call order, are cut into runs.  A
// run of two or more "fusable" calls is one launch: all-reduces and reduces
// of the same stream, dtype, op and divisor, without pre-multiplication, each
// at most slotBytes, laid out in one slot of slotBytes at 16-byte aligned
// byte offsets, at most maxCalls of them, none on memory an earlier one of
// the run touches (call_memory.h: the kernel stages every input before it
// writes a result).  Every other call is a run of its own, enqueued as
// usual.  One rank alone fuses nothing (its calls need no exchange).  Every
// rank computes the same plan from the same calls, which keeps their
// launches (and barrier counts) in step; only buffers that alias on some
// ranks and not on others can make plans differ.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "schedule/call_memory.h"
#include "schedule/schedules.h"

namespace coll::sched {

struct DeviceGroupCall {
  CollKind kind = CollKind::AllReduce;
  size_t count = 0;
  size_t elemSize = 4;
  int dtype = 0;
  int op = 0;
  uint64_t divisor = 0;
  bool premul = false;
  const void* stream = nullptr;
  CallMemory memory;  // this rank's buffers
};

struct DeviceGroupRun {
  size_t first = 0;             // index of the run's first call
  size_t calls = 1;             // how many
  bool fused = false;           // one launch for all of them
  std::vector<size_t> offsets;  // fused: each call's byte offset in the slot
};

std::vector<DeviceGroupRun> planDeviceGroup(const std::vector<DeviceGroupCall>& calls, int nranks, size_t slotBytes,
                                            int maxCalls);

// Whether a group is left to planDeviceGroup even when the program kernel
// is on: every call is a small all-reduce/reduce it can fuse (that kernel
// has the lowest latency), or there is only one rank.
bool groupWantsSmallKernel(const std::vector<DeviceGroupCall>& calls, int nranks, size_t slotBytes);

// The program kernel's launches for a group (device_program.h): runs of
// consecutive calls on the same stream whose reducing calls (all-reduce,
// reduce-scatter, reduce) share dtype and op, at most maxCalls each (copy-
// only calls join any run).  `fused` is true for every run; `offsets` is
// empty.
std::vector<DeviceGroupRun> planProgramRuns(const std::vector<DeviceGroupCall>& calls, int maxCalls);

}  // namespace coll::sched
