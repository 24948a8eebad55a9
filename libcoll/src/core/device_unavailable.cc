// device_unavailable.cc — the device entry points of a build without the
// CUDA toolkit: device buffers are recognised (buffer_kind.cc) and refused.
#include "core/comm.h"
#include "core/device_path.h"

namespace coll::core {

Status submitDevice(collComm*, const OpRequest& r) {
  return makeError(collInvalidUsage, "{}: the buffers are CUDA device memory, but this libcoll was built without the "
                   "CUDA toolkit (configure with nvcc available)", r.api);
}

Status deviceAsyncFailure(collComm*) { return Status::ok(); }

void teardownDevice(collComm*) {}

Status flushDeviceGroup() { return Status::ok(); }

}  // namespace coll::core
