// call_memory.h — the user memory a collective touches on one rank, and
// which calls of a group must not share a launch with earlier ones because
// they touch the same bytes (pure functions: tests/schedule).
//
// Why: the device path runs a group's calls in one launch where it can (the
// program kernel, the fused small all-reduce), and inside a launch nothing
// orders one call's accesses after another's: the program kernel's blocks
// never wait for each other, and the fused kernel stages every call's input
// before it writes any result.  A call that reads what an earlier call of
// its launch writes (or writes what it reads or writes) must start a new
// launch; the stream orders launches.
//
// Every rank decides from its own pointers.  Ranks whose buffers alias
// differently may then cut a group differently: harmless for the program
// kernel (cuts change no barrier or chunk), a difference in launches for
// the fused kernel that the calls' signatures report (device_comm.h).
#pragma once

#include <cstdint>
#include <vector>

#include "schedule/schedules.h"

namespace coll::sched {

// Bytes [lo, hi); empty when hi <= lo.
struct ByteRange {
  uintptr_t lo = 0, hi = 0;
  bool empty() const { return hi <= lo; }
  bool overlaps(const ByteRange& o) const { return !empty() && !o.empty() && lo < o.hi && o.lo < hi; }
};

// What one call reads (its send buffer, a pre-multiply scalar in device
// memory) and writes (its receive buffer) on this rank.
struct CallMemory {
  ByteRange send, scalar, recv;
};

// The memory of collective `kind` (AllReduce .. Reduce) with the C API's
// count, on rank `rank` of nranks: a broadcast's non-roots read no send
// buffer, a reduce's non-roots write no receive buffer.  scalar: the device
// scalar (elemSize bytes), or null.
CallMemory callMemory(CollKind kind, uint64_t count, uint32_t elemSize, int root, int rank, int nranks,
                      const void* send, const void* recv, const void* scalar);

// Whether `later` must run after `earlier` has finished: it reads bytes
// earlier writes, or writes bytes earlier reads or writes.
bool dependsOn(const CallMemory& later, const CallMemory& earlier);

// The calls (indices, ascending) that must begin a new launch: call j when
// it depends on some call since the last such cut (call 0 never).
std::vector<size_t> dependentCalls(const std::vector<CallMemory>& calls);

}  // namespace coll::sched
