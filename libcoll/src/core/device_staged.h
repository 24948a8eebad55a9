// device_staged.h — device buffers through the host executor, for ranks the
// device path cannot map (other hosts, GPUs without peer access) or when
// COLL_DEVICE_PATH=staged.  Each call becomes three stream operations: copy
// the input to pinned staging memory, a host function (cudaLaunchHostFunc)
// that runs the host collective on the staging buffers over the
// communicator's transports (shm, sockets), and copy the result back.  So it
// is stream-ordered and capturable like the direct path; the host function
// blocks CUDA's callback thread, never the caller.  A group's send/recv run
// in one host function, as one host group.
//
// Limits: a pre-mul op with a device-resident scalar is refused (the host
// cannot read it there); host-buffer calls on the same communicator must not
// interleave with staged calls that are still queued (their order on the
// communicator would differ between ranks).
#pragma once

#include <cuda_runtime_api.h>

#include <vector>

#include "core/op_request.h"

struct collComm;

namespace coll::core {

struct StagingPool;

// reqs: one collective, or a group's send/recv (all on comm).
Status enqueueStaged(collComm* comm, const std::vector<OpRequest>& reqs, cudaStream_t stream);

// At teardown, after the device work is done: frees the pinned buffers.
void releaseStaging(collComm* comm);

}  // namespace coll::core
