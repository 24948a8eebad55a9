// device_staged.h — device buffers through the host executor, for ranks the
// device path cannot map (other hosts, GPUs without peer access) or when
// COLL_DEVICE_PATH=staged.
//
// A call is cut into pieces of at most COLL_STAGED_PIECE_BYTES a side
// (schedule/staged_pieces.h) that go through up to kStagedSlots pinned
// slots in turn (device/entry/staged_call.h).  The stream gets two
// operations per call: a host function that posts the call to the
// communicator's proxy thread (device/entry/staged_proxy.h) and returns,
// and the call's kernel (device/staged_kernel.h), which copies each piece
// into its slot, waits for the proxy to run the host collective on the slot
// over the communicator's transports (shm, sockets), and copies the result back,
// the next piece's copy in overlapping this one's host collective; then it
// releases the call (the next staged call frees released calls and reuses
// their slots).  The proxy makes no CUDA call, and the kernel waits for
// nothing but the proxy (staged_kernel.h says why).  So a call pins at
// most kStagedSlots x (a piece in and out) whatever its size, its stream
// holds two operations whatever its size (so no call's size fills the
// stream's queue), and no host function ever waits.  Stream-ordered and
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

// reqs: one collective, or a group's send/recv (all on comm).  On an error
// the communicator is failed (failStaged): the peers take part in the call.
Status enqueueStaged(collComm* comm, const std::vector<OpRequest>& reqs, cudaStream_t stream);

// A failure of the host-staged path on this rank (enqueueing a call, or its
// proxy running one): the communicator fails, so its later calls finish
// unrun, and the first such failure is told to every peer, which would
// otherwise wait for this rank in its host collective until its timeout.
void failStaged(collComm* comm, const Status& s);

// The end of a group whose staged calls used several streams: each of
// them waits for the group's last call (device/stream_order.h).
Status joinStagedStreams(collComm* comm, const std::vector<cudaStream_t>& streams);

// At teardown, after the device work is done: stops the proxy and frees the
// pinned slots.
void releaseStaging(collComm* comm);

}  // namespace coll::core
