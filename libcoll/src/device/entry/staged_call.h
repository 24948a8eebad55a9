// staged_call.h — one device call on the host-staged path, as its stream
// operations (device/entry/device_staged.cc, which builds it) and its proxy
// thread (device/entry/staged_proxy.cc, which runs it) share it.
//
// The call is cut into pieces (schedule/staged_pieces.h); piece k lives in
// slot k mod slots — pinned, host-mapped memory laid out as
//   [header: StagedSlotControl, the pre-mul scalars' copies, the ops'
//    StagedOpDescs][op 0 in][op 0 out][op 1 in]...
// (every slot alike; only slot 0's header is read).  The stream runs two
// operations per call, whatever its size: a host function that posts the
// call to the proxy, and the call's kernel (device/staged_kernel.h), which
// copies each piece in and out as the proxy runs them, then releases the
// call: the next staged call on the communicator frees it (unless
// captured).  Why not per-piece stream operations: a stream holds a
// bounded number of queued operations, fewer with host functions between
// them, and past that the enqueue itself blocks until the GPU catches up,
// so the caller would wait behind a busy stream (docs/ARCHITECTURE.md,
// "Device collectives", has what an H200 showed).  So no host function
// frees the call either.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <vector>

#include "core/op_request.h"
#include "device/staged_kernel.h"

namespace coll::core {

class StagedProxy;
struct StagedCall;
struct PinnedBuffer;  // device/entry/device_staged.cc

// The post host function's argument: the stream has reached `call`.
struct StagedPost {
  StagedProxy* proxy = nullptr;
  StagedCall* call = nullptr;
};

// One op of the call (the collective, or one send/recv of a group) as the API
// took it (device pointers), and where its piece lives in every slot.
struct StagedOp {
  OpRequest request;
  size_t pieceElems = 1;
  size_t pieces = 1;
  size_t inOffset = 0, outOffset = 0;  // bytes into a slot
  // Segments of a piece per side (0: the side is not used on this rank):
  // N for reduce-scatter's input and all-gather's output, else 1.
  int inBlocks = 0, outBlocks = 0;
  // A pre-mul scalar in device memory: its pinned copy (slot 0's header),
  // made by the kernel before the first piece; the host reads it there.
  const void* scalarAt = nullptr;
};

// Slot 0's header: the shared words, op j's device pre-mul scalar copy at
// kStagedScalarOffset + 8 j (j < kStagedMaxScalars), then the ops'
// descriptions for the kernel.
constexpr size_t kStagedScalarOffset = (sizeof(device::StagedSlotControl) + 63) / 64 * 64;
constexpr size_t kStagedOpsOffset = kStagedScalarOffset + 8 * device::kStagedMaxScalars;
static_assert(sizeof(device::StagedSlotControl) <= kStagedScalarOffset);
constexpr size_t stagedHeaderBytes(size_t nops) {
  return (kStagedOpsOffset + nops * sizeof(device::StagedOpDesc) + 255) / 256 * 256;
}

struct StagedCall {
  std::vector<StagedOp> ops;
  size_t pieces = 1;  // the most of any op's
  int device = 0;     // the CUDA device of the user's buffers
  std::vector<unsigned char*> slots;
  device::StagedKernelArgs kernel;  // device pointers into the slots
  StagedPost post;
  std::vector<PinnedBuffer*> buffers;  // the slots' memory, returned by StagedState::sweep

  size_t slotOf(size_t piece) const { return piece % slots.size(); }
  // The words the kernel and the proxy share (slot 0's).
  device::StagedSlotControl* control() const { return reinterpret_cast<device::StagedSlotControl*>(slots[0]); }
  // The kernel's blocks: piece k is in once each block's ready is > k.
  int blocks() const { return kernel.blocks; }
  // Piece `piece`'s requests on its slot's memory, for the host executor
  // (ops that have fewer pieces are left out).
  std::vector<OpRequest> hostRequests(size_t piece) const;
};

}  // namespace coll::core
