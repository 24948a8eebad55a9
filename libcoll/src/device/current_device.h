// current_device.h — makes a CUDA device current for a scope, then restores
// the caller's (the device executor's enqueues, the host-staged enqueue,
// teardown).
#pragma once

#include <cuda_runtime_api.h>

#include "p2p/cuda_status.h"
#include "coll/base/status.h"

namespace coll::device {

// Makes `device` current for a scope and restores the caller's device.  A
// process that drives several GPUs may have another one current when it
// calls: a kernel launched on a stream must be launched with the stream's
// device current, and cudaDeviceSynchronize waits for the current device
// only.  status() says whether `device` is current.
class CurrentDevice {
 public:
  explicit CurrentDevice(int device) {
    status_ = p2p::cudaStatus(cudaGetDevice(&previous_), "cudaGetDevice");
    if (!status_.isOk() || previous_ == device) {
      previous_ = -1;  // nothing to restore
      return;
    }
    status_ = p2p::cudaStatus(cudaSetDevice(device), "cudaSetDevice");
  }
  ~CurrentDevice() {
    if (previous_ >= 0) (void)cudaSetDevice(previous_);
  }
  CurrentDevice(const CurrentDevice&) = delete;
  CurrentDevice& operator=(const CurrentDevice&) = delete;
  const Status& status() const { return status_; }

 private:
  int previous_ = -1;
  Status status_ = Status::ok();
};

}  // namespace coll::device
