// cuda_status.h — a CUDA runtime result as a Status naming what failed
// (shared by the P2P transport and the device collectives above it).
#pragma once

#include <cuda_runtime_api.h>

#include "util/status.h"

namespace coll::p2p {

inline Status cudaStatus(cudaError_t e, const char* what) {
  if (e == cudaSuccess) return Status::ok();
  return makeError(collUnhandledCudaError, "{}: {} ({})", what, cudaGetErrorString(e), cudaGetErrorName(e));
}

}  // namespace coll::p2p
