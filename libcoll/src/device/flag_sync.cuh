// flag_sync.cuh — the flag protocol shared by the barrier and the one-launch
// small all-reduce (nvcc only): system-scope release/acquire on the ranks'
// flag words, and a bounded wait for every rank.
#pragma once

namespace coll::device {

__device__ __forceinline__ unsigned long long globalNs() {
  unsigned long long t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

// A flag may be written by another process: system scope.
__device__ __forceinline__ unsigned long long loadAcquire(const unsigned long long* p) {
  unsigned long long v;
  asm volatile("ld.acquire.sys.global.u64 %0, [%1];" : "=l"(v) : "l"(p) : "memory");
  return v;
}

// Publishes `value` in *flag after everything this thread (and, after a
// __syncthreads, its block; and earlier work on the stream) wrote.
__device__ __forceinline__ void publish(unsigned long long* flag, unsigned long long value) {
  __threadfence_system();
  asm volatile("st.release.sys.global.u64 [%0], %1;" ::"l"(flag), "l"(value) : "memory");
}

// The block waits until flags[r] >= target for every rank r (thread t waits
// for ranks t, t + blockDim, ...).  Past timeoutNs a thread stops waiting and
// records (1 << 32) | (r + 1) in *error for the first rank that did not
// arrive.  Flags only grow, so a peer that is already ahead passes.
__device__ __forceinline__ void waitForAll(unsigned long long* const* flags, int nranks, unsigned long long target,
                                           unsigned long long timeoutNs, unsigned long long* error) {
  const unsigned long long start = globalNs();
  for (int r = threadIdx.x; r < nranks; r += blockDim.x) {
    unsigned sleep = 32;
    while (loadAcquire(flags[r]) < target) {
      if (globalNs() - start > timeoutNs) {
        atomicCAS(error, 0ull, (1ull << 32) | static_cast<unsigned long long>(r + 1));
        __threadfence_system();
        break;
      }
      __nanosleep(sleep);
      if (sleep < 512) sleep *= 2;
    }
  }
  __syncthreads();
}

}  // namespace coll::device
