#include "cuda_bridge.h"

#include <cuda_runtime_api.h>

namespace coll::nccl {
namespace {

Status cudaFailure(const char* what, cudaError_t e) {
  return makeError(collUnhandledCudaError, "{}: {} ({})", what, cudaGetErrorString(e), cudaGetErrorName(e));
}

}  // namespace

int currentCudaDevice() {
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess || count == 0) {
    (void)cudaGetLastError();  // no device: not an error the caller's next CUDA call should see
    return -1;
  }
  int d = -1;
  if (cudaGetDevice(&d) != cudaSuccess) return -1;
  return d;
}

Status selectCudaDevice(int device) {
  if (device < 0) return Status::ok();
  cudaError_t e = cudaSetDevice(device);
  return e == cudaSuccess ? Status::ok() : cudaFailure("cudaSetDevice", e);
}

Status cudaAlloc(void** ptr, size_t bytes) {
  cudaError_t e = cudaMalloc(ptr, bytes);
  return e == cudaSuccess ? Status::ok() : cudaFailure("ncclMemAlloc: cudaMalloc", e);
}

Status cudaRelease(void* ptr) {
  cudaError_t e = cudaFree(ptr);
  return e == cudaSuccess ? Status::ok() : cudaFailure("ncclMemFree: cudaFree", e);
}

}  // namespace coll::nccl
