// device_entry.h — the device path as core sees it: the only header of
// device/entry that core/ includes.  A call whose buffers are CUDA device
// memory (core/submit.cc decides) is enqueued on the caller's stream by the
// device executor (libcoll/src/device, built with the CUDA toolkit:
// device_submit.cc), or refused with the reason when this build has none
// (device_unavailable.cc).
#pragma once

#include "core/op_request.h"

struct collComm;

namespace coll::core {

// Enqueues a validated device call (count > 0) on r.stream.  The first one
// on a communicator sets up the device state, a collective step (all ranks
// make their first device call together, as with any collective).
Status submitDevice(collComm* comm, const OpRequest& r);

// At the outermost collGroupEnd: launches the group's device send/recv, one
// kernel per communicator.
Status flushDeviceGroup();

// A failure the device work reported after its call returned: a barrier
// that timed out (collTimeout) or ranks whose calls differ
// (collArgMismatch); ok when none.
Status deviceAsyncFailure(collComm* comm);

// Before the communicator goes: waits for this rank's device work, then
// (when the communicator is healthy) for every rank to get here, so nobody
// unmaps regions a peer's last barrier still reads.  No-op without device
// state.
void teardownDevice(collComm* comm);

}  // namespace coll::core
