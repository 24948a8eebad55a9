// local_plan.h — one collective whose ranks all live in this process (the
// local device path, device/local_clique.h), as a pure function: the copies
// and fused reductions each GPU's hub stream runs over the ranks' own
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
// between them.
//
// A reduction is one item (one kernel, device/local_reduce.h) that reads up
// to `fan` inputs and writes its result to up to `fan` outputs: each element
// is read from every input and then written to every output by the same
// thread, so an output may be exactly an input (in place) but must not
// overlap one partially.  More ranks than the fan: a chain of items, the
// first output accumulating (item k reads it and the next fan - 1 inputs).
// Reductions go in rank order, rounded to the dtype after each step; a
// pre-multiplied input is rounded before it is combined; the post-op (avg)
// comes with the last step: the bits of the IPC path and of the host
// reference.  So an all-reduce of N <= fan ranks on one GPU is one kernel
// moving (N + N)·S bytes: each input read once, each output written once.
// Outputs that overlap inputs any other way than exactly (never NCCL's
// in-place layouts) take the hub's scratch, in pieces, then copies out.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "schedule/schedules.h"

namespace coll::sched {

// The most inputs and outputs of one reduction item (the kernel's arrays).
inline constexpr int kLocalFan = 8;

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
  // Per hub: scratchBytes of its GPU's memory (the accumulator of outputs
  // that overlap inputs partially).
  std::vector<uintptr_t> scratch;
  size_t scratchBytes = 0;  // at least one element
  int fan = kLocalFan;      // inputs and outputs per reduction item, 2..kLocalFan
};

struct LocalSource {
  uintptr_t addr = 0;
  int preRank = -1;  // pre-multiply by this rank's scalar (-1: none)
};

struct LocalItem {
  enum class Kind : uint8_t { Copy, Reduce };
  Kind kind = Kind::Copy;
  // Copy: dst[0] <- src[0].addr (ndst = nsrc = 1).
  // Reduce: every dst[k] = post(pre(src[0]) op pre(src[1]) op ...), in
  // source order, each pre-multiplied source and each step rounded (a lone
  // source: post(pre(src[0])), rounded after each).
  uintptr_t dst[kLocalFan] = {};
  LocalSource src[kLocalFan] = {};
  int ndst = 0, nsrc = 0;
  size_t count = 0;   // elements
  bool post = false;  // Reduce: apply the post-op (avg's divide) after the last source
};

// plan[h]: hub h's items, in stream order.  Hubs: args.scratch.size().
std::vector<std::vector<LocalItem>> planLocal(const LocalPlanArgs& args);

// Elements per slice unit: slices start at multiples of 256 bytes of a
// buffer's start (aligned vector loads, when the buffer is).
size_t localSliceUnit(size_t elemSize);

}  // namespace coll::sched
