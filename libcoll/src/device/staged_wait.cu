// staged_wait.cu — see staged_wait.h.
#include "device/staged_wait.h"

#include "coll/kernel_launch.h"
#include "flag_sync.cuh"

namespace coll::device {
namespace {

// One thread.  The proxy writes `done` from the host: system-scope acquire,
// so the copy back after this kernel sees the result the proxy wrote before.
// `released` last: the host may free the call once it reads it.
__global__ void stagedWaitKernel(StagedSlotControl* control) {
  const unsigned long long target = p2p::loadAcquire(&control->posted);
  unsigned sleep = 64;
  while (p2p::loadAcquire(&control->done) < target) {
    __nanosleep(sleep);
    if (sleep < 4096) sleep *= 2;
  }
  p2p::storeRelease(&control->released, target);
}

}  // namespace

cudaError_t loadStagedWaitKernel() { return cuda::load(stagedWaitKernel); }

cudaError_t launchStagedWait(StagedSlotControl* control, cudaStream_t s) {
  return cuda::launch(stagedWaitKernel, dim3(1), dim3(1), 0, s, control);
}

}  // namespace coll::device
