// call_memory.cc — see call_memory.h.
#include "schedule/call_memory.h"

namespace coll::sched {
namespace {

ByteRange rangeOf(const void* p, uint64_t bytes) {
  if (p == nullptr || bytes == 0) return {};
  const uintptr_t lo = reinterpret_cast<uintptr_t>(p);
  return {lo, lo + static_cast<uintptr_t>(bytes)};
}

}  // namespace

CallMemory callMemory(CollKind kind, uint64_t count, uint32_t elemSize, int root, int rank, int nranks,
                      const void* send, const void* recv, const void* scalar) {
  const uint64_t bytes = count * elemSize, all = bytes * static_cast<uint64_t>(nranks);
  uint64_t in = bytes, out = bytes;
  switch (kind) {
    case CollKind::AllGather: out = all; break;
    case CollKind::ReduceScatter: in = all; break;
    case CollKind::Broadcast: in = rank == root ? bytes : 0; break;
    case CollKind::Reduce: out = rank == root ? bytes : 0; break;
    default: break;
  }
  CallMemory m;
  m.send = rangeOf(send, in);
  m.recv = rangeOf(recv, out);
  m.scalar = rangeOf(scalar, elemSize);
  return m;
}

bool dependsOn(const CallMemory& later, const CallMemory& earlier) {
  const ByteRange& w = earlier.recv;
  return later.send.overlaps(w) || later.scalar.overlaps(w) || later.recv.overlaps(w) ||
         later.recv.overlaps(earlier.send) || later.recv.overlaps(earlier.scalar);
}

std::vector<size_t> dependentCalls(const std::vector<CallMemory>& calls) {
  std::vector<size_t> cuts;
  size_t since = 0;  // the first call of the current launch
  for (size_t j = 1; j < calls.size(); ++j)
    for (size_t i = since; i < j; ++i)
      if (dependsOn(calls[j], calls[i])) {
        cuts.push_back(j);
        since = j;
        break;
      }
  return cuts;
}

}  // namespace coll::sched
