// staged_call.h — one device call on the host-staged path, as its stream
// operations (core/device_staged.cc, which builds it) and its proxy thread
// (core/staged_proxy.cc, which runs it) share it.
//
// The call is cut into pieces (schedule/staged_pieces.h); piece k lives in
// slot k mod slots — pinned, host-mapped memory laid out as
//   [StagedSlotControl, scalar copies: 256 B][op 0 in][op 0 out][op 1 in]...
// and the stream runs, per piece: copy the input into the slot, a host
// function that posts the piece to the proxy, ... later: wait for the
// proxy (device/staged_wait.h), copy the result back.
#pragma once

#include <cstddef>
#include <vector>

#include "core/op_request.h"
#include "device/staged_wait.h"

namespace coll::core {

class StagedProxy;
struct StagedCall;
struct PinnedBuffer;  // core/device_staged.cc

// A slot's post host function's argument: the next piece of `call` is in
// slot `slot`.
struct StagedPost {
  StagedProxy* proxy = nullptr;
  StagedCall* call = nullptr;
  size_t slot = 0;
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
  // made in stream order before the first piece; the host reads it there.
  const void* scalarAt = nullptr;
};

constexpr size_t kStagedSlotHeader = 256;  // StagedSlotControl, then the pre-mul scalars' copies
constexpr size_t kStagedScalarOffset = 64;  // op j's scalar copy at + 8 j (j < 24)

struct StagedCall {
  std::vector<StagedOp> ops;
  size_t pieces = 1;  // the most of any op's
  std::vector<unsigned char*> slots;
  std::vector<const device::StagedSlotControl*> deviceControls;  // each slot's words, as the device sees them
  std::vector<StagedPost> posts;                                  // one per slot
  std::vector<PinnedBuffer*> buffers;                             // the slots' memory, returned at finish

  size_t slotOf(size_t piece) const { return piece % slots.size(); }
  device::StagedSlotControl* control(size_t slot) const {
    return reinterpret_cast<device::StagedSlotControl*>(slots[slot]);
  }
  // Piece `piece`'s requests on its slot's memory, for the host executor
  // (ops that have fewer pieces are left out).
  std::vector<OpRequest> hostRequests(size_t piece) const;
};

}  // namespace coll::core
