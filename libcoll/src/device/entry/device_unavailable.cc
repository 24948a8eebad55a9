// device_unavailable.cc — device_entry.h in a build without the CUDA
// toolkit: device buffers are recognised (core/buffer_kind.cc) and refused.
#include "device/entry/device_entry.h"

#include "core/comm.h"

namespace coll::core {

Status submitDevice(collComm*, const OpRequest& r) {
  return makeError(collInvalidUsage, "{}: the buffers are CUDA device memory, but this libcoll was built without the "
                   "CUDA toolkit (configure with nvcc available)", r.api);
}

Status deviceAsyncFailure(collComm*) { return Status::ok(); }

void teardownDevice(collComm*) {}

Status flushDeviceGroup() { return Status::ok(); }

}  // namespace coll::core
