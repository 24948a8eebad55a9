// current_device.h — makes a CUDA device current for a scope (core's device
// paths: the host-staged enqueue, teardown), then restores the caller's.
#pragma once

#include <cuda_runtime_api.h>

#include "cuda_status.h"
#include "util/status.h"

namespace coll::core {

// Makes `device` current for a scope and restores the caller's device.  A
// process that drives several GPUs may have another one current when it
// calls: a kernel launched on a stream must be launched with the stream's
// device current, and cudaDeviceSynchronize waits for the current device
// only.
class CurrentDevice {
 public:
  explicit CurrentDevice(int device) {
    if (cudaGetDevice(&previous_) != cudaSuccess) previous_ = -1;
    if (previous_ != device) status_ = p2p::cudaStatus(cudaSetDevice(device), "cudaSetDevice");
    else previous_ = -1;  // nothing to restore
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

}  // namespace coll::core
