// local_plan.h — one collective whose ranks all live in this process (the
// local device path, device/local_clique.h), as a pure function: the copies
// and two-input reductions each GPU's hub stream runs over the ranks' own
// buffers.
//
// Why no peer barriers here: ranks of one process enqueue on streams of one
// CUDA context, which CUDA may alias onto one hardware work queue, so a
// kernel that waits for another rank's kernel may wait for ever behind it
// (docs/ARCHITECTURE.md, "Ranks of one process").  Nothing in a plan waits:
// the ranks' streams are joined by events around the hubs' work, and a plan
// is ordinary stream work on one stream per GPU.
//
// Each GPU (hub) takes one slice of the call's elements — of the larger side
// for all-gather (output) and reduce-scatter (input) — and does all of it:
// reads every rank's input there and writes every rank's output there.  So
// two hubs never touch the same byte (in place too) and need no order
// between them.  Reductions go in rank order, rounded to the dtype after each
// step; a pre-multiplied input is rounded before it is added (through the
// hub's scratch); the post-op (avg) comes with the last step: the bits of
// the IPC path and of the host reference.  A hub accumulates straight into an
// output when that output overlaps no input its chain still reads; else in
// its scratch, in pieces, then copies out.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "schedule/schedules.h"

namespace coll::sched {

// One rank's buffers (addresses as the hubs use them) and its GPU's hub.
struct LocalRankBufs {
  uintptr_t send = 0;
  uintptr_t recv = 0;
  int hub = 0;
};

struct LocalPlanArgs {
  CollKind kind = CollKind::AllReduce;  // a collective, not send/recv
  size_t count = 0;                     // the API's count
  size_t elemSize = 4;
  int root = -1;
  bool premul = false;                  // a pre-multiplied sum (each rank's own scalar)
  std::vector<LocalRankBufs> ranks;     // in rank order
  // Per hub: 2 x scratchBytes of its GPU's memory, the accumulator first,
  // then the pre-multiply buffer.
  std::vector<uintptr_t> scratch;
  size_t scratchBytes = 0;  // at least one element
};

struct LocalItem {
  enum class Kind : uint8_t { Copy, Reduce };
  Kind kind = Kind::Copy;
  // Copy: dst <- b.  Reduce: dst = post(a op pre(b)), or post(pre(b)) when
  // a == 0 (the host kernels' reduce() convention).
  uintptr_t dst = 0, a = 0, b = 0;
  size_t count = 0;   // elements
  int preRank = -1;   // Reduce: pre-multiply b by this rank's scalar (-1: none)
  bool post = false;  // Reduce: apply the post-op (avg's divide)
};

// plan[h]: hub h's items, in stream order.  Hubs: args.scratch.size().
std::vector<std::vector<LocalItem>> planLocal(const LocalPlanArgs& args);

// Elements per slice unit: slices start at multiples of 256 bytes of a
// buffer's start (aligned vector loads, when the buffer is).
size_t localSliceUnit(size_t elemSize);

}  // namespace coll::sched
