// staged_kernel.h — the stream's side of a host-staged call
// (device/entry/device_staged.h): one kernel that copies each piece of the
// call between the user's device buffers and the call's pinned, host-mapped
// slots, paced by the communicator's proxy thread
// (device/entry/staged_proxy.h), which runs the host collective on each piece in between.
//
// Why the kernel copies, and the proxy makes no CUDA call: the kernel waits,
// and what it waits for must not be GPU work of this process.  Before, the
// proxy copied on a stream of its own while a wait kernel held the caller's
// stream, and an H200 run under MPS hung: CUDA aliases a process's streams
// onto a few hardware work queues (under MPS the clients of a server share
// one pool), so a copy could queue behind the very kernel waiting for it.
// And the proxy's CUDA calls contended for the driver's locks with the
// application's synchronous calls (another H200 deadlock).  Now the kernel
// waits only for words in pinned memory that the proxy writes.
//
// Per piece k (slot k mod nslots): the kernel copies the piece in and
// announces it (ready = k + 1); the proxy waits for that, runs the piece's
// host call on the slot and announces it (finished = k + 1); the kernel
// copies the results out.  Piece k + 1 is copied in before the kernel
// waits for piece k, so a copy overlaps a host call.
//
// The kernel has `blocks` blocks (1 to kStagedMaxBlocks), each copying its
// share of every piece and announcing it in its own words (ready[b],
// released[b]): no atomics on host memory, which PCIe may not carry.
// Several blocks, because one block's threads each wait a PCIe round trip
// per load of host memory, too slow for a piece (docs/PERFORMANCE.md, the
// host-staged path's timings).
#pragma once

#include <cuda_runtime_api.h>

namespace coll::device {

constexpr int kStagedMaxSlots = 3;     // slots a call cycles through
constexpr int kStagedMaxBlocks = 16;   // the kernel's blocks, at most
constexpr int kStagedMaxScalars = 24;  // device pre-mul scalars per call

// The words a staged call's kernel and proxy share, at the start of the
// call's slot 0 (host-mapped pinned memory).  The post host function
// zeroes ready, finished and skip, then adds 1 to posted: one run each time
// the stream reaches the call (a captured call runs once per graph launch).
// Per block b of the kernel: ready[b] and released[b].
struct StagedSlotControl {
  unsigned long long posted;    // runs the stream reached
  unsigned long long finished;  // this run: pieces the proxy ran, their results in their slots
  unsigned long long skip;      // this run: 1 once the proxy gave up (failed communicator): nothing is copied back
  // This run: pieces block b copied its share of in (block 0: and the
  // scalars before the first).  Piece k is in once every block's is > k.
  unsigned long long ready[kStagedMaxBlocks];
  // The last run block b is done with: once every block's is, nothing
  // reads the call.
  unsigned long long released[kStagedMaxBlocks];
};

// One op of the call (the collective, or one send/recv of a group), as the
// kernel reads it from slot 0's header.  Piece k holds elements
// [k pieceElems, + min(pieceElems, count - k pieceElems)) of each block;
// block b of a side is the user's elements from b count, packed at
// b (piece bytes) from the side's offset in the slot.  No member
// initializers: the kernel keeps one in shared memory (value-initialize it
// on the host).
struct StagedOpDesc {
  const unsigned char* send;  // device memory; read when inBlocks > 0
  unsigned char* recv;        // device memory; written when outBlocks > 0
  unsigned long long count;   // elements per block
  unsigned long long pieceElems;
  unsigned long long pieces;
  unsigned long long inOffset, outOffset;  // bytes into a slot
  unsigned int inBlocks, outBlocks;        // 0: the side is not used on this rank
  unsigned long long elemSize;
};

// A device pre-mul scalar, copied into slot 0 at `toOffset` before the
// first piece is announced (the host executor reads it there).
struct StagedScalarDesc {
  unsigned long long toOffset = 0;
  const void* from = nullptr;
  unsigned long long bytes = 0;
};

struct StagedKernelArgs {
  StagedSlotControl* control = nullptr;  // slot 0's words, device pointer
  int blocks = 1;                        // the kernel's blocks (1..kStagedMaxBlocks)
  unsigned char* slots[kStagedMaxSlots] = {};
  int nslots = 1;
  const StagedOpDesc* ops = nullptr;  // nops of them, device pointer (slot 0's header)
  int nops = 0;
  unsigned long long pieces = 1;  // the most of any op's
  int nscalars = 0;
  StagedScalarDesc scalars[kStagedMaxScalars];
};

// Enqueues the call's kernel on s.  It waits for the proxy; the proxy's
// waits are bounded by COLL_TIMEOUT, and a failed or aborted communicator's
// calls are finished unrun (skip), so the kernel always ends.
cudaError_t launchStagedCall(const StagedKernelArgs& a, cudaStream_t s);
// Loads the kernel now (device/kernel_loading.h).
cudaError_t loadStagedKernel();

}  // namespace coll::device
