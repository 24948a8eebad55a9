// device_staged.h — device buffers through the host executor, for ranks the
// device path cannot map (other hosts, GPUs without peer access) or when
// COLL_DEVICE_PATH=staged.
//
// A call is cut into pieces of at most COLL_STAGED_PIECE_BYTES a side
// (schedule/staged_pieces.h) that go through up to kStagedSlots pinned
// slots in turn (core/staged_call.h).  Per piece the stream copies the input
// into the piece's slot and runs a host function that posts the piece to
// the communicator's proxy thread (core/staged_proxy.h) and returns; the
// proxy runs the host collective on the slot over the communicator's
// transports (shm, sockets) and marks it done; a wait kernel
// (device/staged_wait.h) then lets the stream copy the result back, and the
// slot takes the piece after next.  So the copies of one piece overlap the
// transfer of another, a call pins at most kStagedSlots x (a piece in and
// out) whatever its size, and no host function ever waits: neither the
// caller nor CUDA's host-function thread blocks.  Stream-ordered and
// capturable (a captured call keeps its slots until teardown).  A group's
// send/recv are one call: piece k of each op, run as one host group.
//
// Limits: host-buffer calls on the same communicator must not interleave
// with staged calls that are still queued (their order on the communicator
// would differ between ranks).
#pragma once

#include <cuda_runtime_api.h>

#include <vector>

#include "core/op_request.h"

struct collComm;

namespace coll::core {

constexpr size_t kStagedSlots = 3;

// reqs: one collective, or a group's send/recv (all on comm).
Status enqueueStaged(collComm* comm, const std::vector<OpRequest>& reqs, cudaStream_t stream);

// At teardown, after the device work is done: stops the proxy and frees the
// pinned slots.
void releaseStaging(collComm* comm);

}  // namespace coll::core
