// cuda_bridge.h — the CUDA runtime calls of the NCCL ABI layer, which the
// collectives never need (libcoll finds a buffer's device itself): which
// device is current (a communicator's, ncclCommCuDevice), making one
// current (an init that ncclGroupEnd runs on a thread of its own), and
// ncclMemAlloc/ncclMemFree.  Without CUDA (cuda_bridge_none.cc) there is no
// device and memory calls fail with a message saying so.
#pragma once

#include <cstddef>

#include "coll/base/status.h"

namespace coll::nccl {

int currentCudaDevice();  // -1 when no device is current or there is no CUDA
Status selectCudaDevice(int device);
Status cudaAlloc(void** ptr, size_t bytes);
Status cudaRelease(void* ptr);

}  // namespace coll::nccl
