// device_stream_ops.cc — see device_stream_ops.h.  Each count follows
// device_collectives.cc's sequence per piece (stage-in: a copy, or a
// pre-multiply kernel; barrier: one kernel; a reduction over N regions: N-1
// kernels; copy: one each).
#include "schedule/device_stream_ops.h"

#include "schedule/device_program.h"

namespace coll::sched {
namespace {

// Operations for `count` elements cut into pieces of at most `cap`, where a
// piece of p elements takes perPiece(p).
template <class PerPiece>
uint64_t overPieces(uint64_t count, uint64_t cap, PerPiece perPiece) {
  if (count == 0 || cap == 0) return 0;
  const uint64_t full = count / cap, rest = count % cap;
  return full * perPiece(cap) + (rest > 0 ? perPiece(rest) : 0);
}

}  // namespace

uint64_t deviceStreamOps(const DeviceGroupCall& c, const DeviceStreamShape& shape) {
  const uint64_t n = static_cast<uint64_t>(shape.nranks < 1 ? 1 : shape.nranks);
  const uint64_t es = c.elemSize == 0 ? 1 : c.elemSize;
  const uint64_t bytes = c.count * es, cap = shape.regionBytes / es;
  const bool oneLaunch = bytes <= shape.oneLaunchBytes;
  switch (c.kind) {
    case CollKind::AllReduce:
      if (n == 1 || oneLaunch) return 1;
      return overPieces(c.count, cap, [&](uint64_t p) {
        // one-shot: stage, barrier, reduce all, barrier; else stage,
        // barrier, reduce a slice, barrier, N copies back, barrier.
        return p * es <= kDeviceOneShotBytes ? n + 2 : 2 * n + 3;
      });
    case CollKind::AllGather: return overPieces(c.count, cap, [&](uint64_t) { return n + 3; });
    case CollKind::Broadcast: return overPieces(c.count, cap, [&](uint64_t) -> uint64_t { return 4; });  // the root's
    case CollKind::ReduceScatter:
      // A strided copy (or N pre-multiplies), barrier, reduce, barrier.
      return overPieces(c.count, cap / n, [&](uint64_t) { return (c.premul ? n : 1) + 1 + (n - 1) + 1; });
    case CollKind::Reduce:
      if (oneLaunch) return 1;
      return overPieces(c.count, cap, [&](uint64_t) { return n + 2; });  // the root's
    default: return 1;
  }
}

bool programByDefault(const DeviceGroupCall& c, const DeviceStreamShape& shape) {
  if (deviceStreamOps(c, shape) > kDeviceStreamOpBudget) return true;
  const uint64_t bytes = c.count * (c.elemSize == 0 ? 1 : c.elemSize);
  return c.kind == CollKind::AllReduce && shape.nranks >= 2 && shape.nranks <= 4 && bytes > shape.oneLaunchBytes &&
         bytes <= kProgramAutoMaxBytes;
}

}  // namespace coll::sched
