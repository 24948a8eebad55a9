// The build without CUDA: no device is ever current, and device memory
// cannot be had.
#include "cuda_bridge.h"

namespace coll::nccl {

int currentCudaDevice() { return -1; }

Status selectCudaDevice(int device) {
  if (device < 0) return Status::ok();
  return makeError(collInvalidUsage, "CUDA device {}: this libnccl.so.2 (libcoll) was built without CUDA", device);
}

Status cudaAlloc(void**, size_t) {
  return makeError(collInvalidUsage, "ncclMemAlloc: this libnccl.so.2 (libcoll) was built without CUDA");
}

Status cudaRelease(void*) {
  return makeError(collInvalidUsage, "ncclMemFree: this libnccl.so.2 (libcoll) was built without CUDA");
}

}  // namespace coll::nccl
