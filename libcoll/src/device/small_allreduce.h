// small_allreduce.h — the one-launch all-reduce for small messages.
//
// One block does, in a single kernel: stage this rank's input (pre-
// multiplied) into its small slot, publish its barrier flag, wait for every
// rank's flag, and reduce all ranks' slots into recv in rank order (post-op
// last) — the same bits as the generic path.  The slot alternates with the
// barrier count's parity, so no trailing barrier is needed: a slot is written
// again two barriers later, after every peer has arrived at the barrier in
// between, i.e. finished reading it.  Its barrier compares the ranks' call
// signatures like every barrier (peer_barrier.h); on a mismatch or a
// timeout it writes nothing to recv.
//
// A group's small all-reduces and reduces of one dtype and op (on one
// communicator and stream) share one launch: each is a segment of the slot
// at its own offset, all staged, then one arrival, then each reduced.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

#include "coll/kernels/reduce.h"
#include "p2p/peer_barrier.h"

namespace coll::device {

struct SmallAllReduceArgs {
  const void* send = nullptr;
  void* recv = nullptr;                     // nullptr: reduce only (a reduce's non-root)
  size_t count = 0;
  kernels::ReduceFn fn;
  const void* deviceScalar = nullptr;       // pre-mul scalar in device memory, or null
  char* const* slots = nullptr;             // device array: rank r's two slots (r's mapping here)
  size_t slotBytes = 0;                     // one slot; count * elemsize must fit
  unsigned long long* counter = nullptr;    // this rank's barrier count
  unsigned long long* const* flags = nullptr;
  int nranks = 1;
  int rank = 0;
  unsigned long long timeoutNs = ~0ull;
  unsigned long long* error = nullptr;      // host-mapped error record (peer_barrier.h)
  p2p::CallSig sig;                         // compared with every rank's
};

// One call of a fused launch: count elements at element `offset` of the slot.
struct SmallSeg {
  const void* send = nullptr;
  void* recv = nullptr;  // nullptr: a reduce's non-root
  size_t count = 0;
  size_t offset = 0;
};
constexpr int kMaxSmallSegs = 32;  // per launch (kernel parameter space)

// One call: a.send, a.recv, a.count.
cudaError_t launchSmallAllReduce(const SmallAllReduceArgs& a, cudaStream_t s);
// nseg calls in one launch (a.send/recv/count unused); every segment must
// fit the slot: (offset + count) * elemsize <= a.slotBytes.
cudaError_t launchSmallAllReduceGroup(const SmallAllReduceArgs& a, const SmallSeg* segs, int nseg, cudaStream_t s);
// Loads every dtype and op's kernel now (device/kernel_loading.h).
cudaError_t loadSmallAllReduceKernels();

}  // namespace coll::device
