// cuda_status.h — a CUDA runtime result as a Status naming what failed
// (shared by the P2P transport and the device collectives above it).
#pragma once

#include <cuda_runtime_api.h>

#include "coll/base/status.h"

namespace coll::p2p {

inline Status cudaStatus(cudaError_t e, const char* what) {
  if (e == cudaSuccess) return Status::ok();
  return makeError(collUnhandledCudaError, "{}: {} ({})", what, cudaGetErrorString(e), cudaGetErrorName(e));
}

// The current device's kernels may access `peer`'s memory from now on (a
// second enable of the same pair is no error, and leaves none behind).
inline Status enablePeerAccess(int peer) {
  const cudaError_t e = cudaDeviceEnablePeerAccess(peer, 0);
  if (e != cudaErrorPeerAccessAlreadyEnabled) return cudaStatus(e, "cudaDeviceEnablePeerAccess");
  (void)cudaGetLastError();
  return Status::ok();
}

}  // namespace coll::p2p
