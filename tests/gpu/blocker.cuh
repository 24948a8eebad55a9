// blocker.cuh — a kernel that holds its stream until the host lets it go
// (or a time limit passes), for the checks of coll_device_coll_test that
// need a call's stream, or a peer, held back.
#pragma once

#include <cuda_runtime.h>

#include <thread>

#include "coll/kernel_launch.h"
#include "device_test_common.h"

namespace devtest {

static __device__ unsigned long long nowNs() {
#if defined(COLL_DEVICE_EMULATION)
  std::this_thread::yield();  // a spinning block on host threads: let the others run
  return coll::emu::nowNs();
#else
  unsigned long long t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
#endif
}

// The host's flag in mapped memory (the host sets it with an atomic store).
static __device__ int released(volatile int* release) {
#if defined(COLL_DEVICE_EMULATION)
  return __atomic_load_n(const_cast<int*>(release), __ATOMIC_ACQUIRE);
#else
  return *release;
#endif
}

// Holds its stream until the host releases it, or limitNs passed; then
// release[1] = 1 tells the host that it was not released in time.
static __global__ void blockerKernel(volatile int* release, unsigned long long limitNs) {
  const unsigned long long start = nowNs();
  while (released(release) == 0) {
    if (nowNs() - start >= limitNs) {
      release[1] = 1;
      return;
    }
  }
}

// A blockerKernel's release word, host-mapped: hold(s) queues a blocker on
// s, release() lets every blocker of it go, heldToLimit() says whether one
// ran out of time first.
class Blocker {
 public:
  Blocker() {
    CUDA_OK(cudaHostAlloc(&host_, 2 * sizeof(int), cudaHostAllocMapped));
    host_[0] = host_[1] = 0;
    CUDA_OK(cudaHostGetDevicePointer(reinterpret_cast<void**>(&dev_), host_, 0));
  }
  ~Blocker() { (void)cudaFreeHost(host_); }
  Blocker(const Blocker&) = delete;
  Blocker& operator=(const Blocker&) = delete;
  void hold(cudaStream_t s, unsigned long long limitNs) {
    CUDA_OK(coll::cuda::launch(blockerKernel, dim3(1), dim3(1), 0, s, dev_, limitNs));
  }
  void release() { __atomic_store_n(host_, 1, __ATOMIC_SEQ_CST); }
  void reset() { host_[0] = host_[1] = 0; }
  bool heldToLimit() const { return __atomic_load_n(&host_[1], __ATOMIC_ACQUIRE) != 0; }

 private:
  int* host_ = nullptr;
  int* dev_ = nullptr;
};

}  // namespace devtest
