// cuda_emulation.h — just enough of the CUDA built-ins to run the device
// kernels' source on the host (g++, no GPU): include it before any kernel
// source.  Two ways to model a block:
//   * default: a block is a host thread with ONE CUDA thread
//     (blockDim.x == 1), so __syncthreads is a no-op and __shared__
//     variables are plain locals; any number of blocks and ranks share the
//     process.  Code without __syncthreads (the block-wide copy and reduce
//     loops) can also be run with blockDim.x > 1 by calling it once per
//     threadIdx.x in turn.
//   * COLL_EMU_PROCESS_BLOCK: a rank is a process (fork) running ONE block
//     of kEmuThreads host threads: __shared__ variables are statics (one
//     block per process shares them) and __syncthreads is a std::barrier.
//     For the single-block kernels (one-launch, LL).
// Memory operations that order ranks use C++ atomics (flag_sync.cuh's
// COLL_DEVICE_EMULATION branch).  This checks the kernels' logic
// (indexing, alignment paths, step interpretation, the flag and LL
// protocols), not the GPU's memory model or performance.
#pragma once

#define COLL_DEVICE_EMULATION 1
#define COLL_CUDA_SOFT_CONVERT 1  // fp16/bf16 through the shared conversions

#include <cuda_runtime.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <thread>

#ifndef __launch_bounds__
#define __launch_bounds__(...)
#endif

namespace coll::emu {
inline unsigned long long nowNs() {
  return static_cast<unsigned long long>(
      std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch()).count());
}
}  // namespace coll::emu

inline thread_local uint3 threadIdx{0, 0, 0};
inline thread_local uint3 blockIdx{0, 0, 0};
inline thread_local uint3 blockDim{1, 1, 1};
inline thread_local uint3 gridDim{1, 1, 1};

#if defined(COLL_EMU_PROCESS_BLOCK)
#include <barrier>
#include <vector>
#undef __shared__
#define __shared__ static
namespace coll::emu {
constexpr unsigned kEmuThreads = 8;
inline std::barrier<>* gBlockBarrier = nullptr;
// Runs kernel(args) as one block of kEmuThreads threads, to completion.
template <class Args>
void runBlock(void (*kernel)(Args), const Args& args) {
  std::barrier<> bar(kEmuThreads);
  gBlockBarrier = &bar;
  std::vector<std::thread> threads;
  for (unsigned t = 0; t < kEmuThreads; ++t)
    threads.emplace_back([&, t] {
      threadIdx.x = t;
      blockDim.x = kEmuThreads;
      blockIdx.x = 0;
      gridDim.x = 1;
      kernel(args);
    });
  for (auto& th : threads) th.join();
  gBlockBarrier = nullptr;
}
}  // namespace coll::emu
inline void __syncthreads() { coll::emu::gBlockBarrier->arrive_and_wait(); }
#else
inline void __syncthreads() {}
#endif
inline float __uint_as_float(unsigned u) {
  float f;
  std::memcpy(&f, &u, sizeof f);
  return f;
}
inline void __nanosleep(unsigned) { std::this_thread::yield(); }
inline void __threadfence_system() { std::atomic_thread_fence(std::memory_order_seq_cst); }
template <class T>
inline T __ldcg(const T* p) {
  return *p;
}
inline unsigned long long atomicAdd(unsigned long long* p, unsigned long long v) {
  return std::atomic_ref<unsigned long long>(*p).fetch_add(v);
}
inline unsigned long long atomicCAS(unsigned long long* p, unsigned long long expected, unsigned long long desired) {
  std::atomic_ref<unsigned long long>(*p).compare_exchange_strong(expected, desired);
  return expected;  // the old value either way
}
