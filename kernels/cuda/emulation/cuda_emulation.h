// cuda_emulation.h — just enough of the CUDA built-ins to run the device
// kernels' source on the host (g++, no GPU).  Included first by every .cu
// file built for the host: by the emulation build (-DCOLL_CUDA_EMULATION=ON
// forces it onto each .cu file, and the emulated runtime of this folder
// stands in for libcudart) and by the kernel tests of tests/device_emu.
// Two ways to model a block:
//   * default: a block is a host thread with ONE CUDA thread
//     (blockDim.x == 1), so __syncthreads is a no-op and __shared__
//     variables are plain locals; all blocks of a grid run at once, each on
//     its own thread (kernels may wait for peers' blocks, never for their
//     own grid's, yet a block may wait for a block of another rank's grid
//     whose index differs, so none may wait for a free thread).  Code
//     without __syncthreads (the block-wide copy and reduce loops) can also
//     be run with blockDim.x > 1 by calling it once per threadIdx.x in turn.
//   * COLL_EMU_PROCESS_BLOCK: a rank is a process (fork) running ONE block
//     of kEmuThreads host threads: __shared__ variables are statics (one
//     block per process shares them) and __syncthreads is a std::barrier.
//     For the single-block kernels (one-launch, LL); a launch runs the
//     block to completion at once (no stream).
// Memory operations that order ranks use C++ atomics (flag_sync.cuh's
// COLL_DEVICE_EMULATION branch).  This checks the kernels' logic
// (indexing, alignment paths, step interpretation, the flag and LL
// protocols) and the host code around them, not the GPU's memory model or
// performance.
#pragma once

#define COLL_DEVICE_EMULATION 1
#define COLL_CUDA_SOFT_CONVERT 1  // fp16/bf16 through the shared conversions

#include <cuda_runtime.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <functional>
#include <thread>
#include <tuple>
#include <vector>

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
// Runs body() as one block of kEmuThreads threads, to completion.
inline void runBlock(const std::function<void()>& body) {
  std::barrier<> bar(kEmuThreads);
  gBlockBarrier = &bar;
  std::vector<std::thread> threads;
  for (unsigned t = 0; t < kEmuThreads; ++t)
    threads.emplace_back([&, t] {
      threadIdx.x = t;
      blockDim.x = kEmuThreads;
      blockIdx.x = 0;
      gridDim.x = 1;
      body();
    });
  for (auto& th : threads) th.join();
  gBlockBarrier = nullptr;
}
// coll::cuda::launch (kernel_launch.h): the one block, run now.
template <class... P>
cudaError_t launch(void (*kernel)(P...), dim3 grid, dim3, cudaStream_t, P... args) {
  if (grid.x != 1 || grid.y != 1 || grid.z != 1) return cudaErrorInvalidConfiguration;
  runBlock([&] { kernel(args...); });
  return cudaSuccess;
}
}  // namespace coll::emu
inline void __syncthreads() { coll::emu::gBlockBarrier->arrive_and_wait(); }
#else
inline void __syncthreads() {}
namespace coll::emu {
enum class NodeKind { Kernel = 1, Memcpy, Memset, Host, Event };
// Queues `work` on the emulated stream (or appends it to the graph the
// stream is capturing).  Defined by the emulated runtime (runtime_*.cc of
// this folder); weak, so a test that runs kernels by hand links without it.
[[gnu::weak, gnu::visibility("default")]] cudaError_t enqueue(cudaStream_t stream, NodeKind kind,
                                                              std::function<void()> work);

// coll::cuda::launch (kernel_launch.h): the grid's blocks as threads, once
// the stream reaches the launch.  The arguments are copied now, as CUDA
// copies kernel parameters at launch.
template <class... P>
cudaError_t launch(void (*kernel)(P...), dim3 grid, dim3, cudaStream_t stream, P... args) {
  if (enqueue == nullptr) return cudaErrorNotSupported;
  if (grid.x == 0 || grid.y != 1 || grid.z != 1) return cudaErrorInvalidConfiguration;
  const unsigned blocks = grid.x;
  return enqueue(stream, NodeKind::Kernel, [=] {
    auto runBlock = [=](unsigned b) {
      blockIdx = uint3{b, 0, 0};
      gridDim = uint3{blocks, 1, 1};
      blockDim = uint3{1, 1, 1};
      threadIdx = uint3{0, 0, 0};
      kernel(args...);
    };
    if (blocks == 1) {
      runBlock(0);
      return;
    }
    std::vector<std::thread> threads;
    threads.reserve(blocks);
    for (unsigned b = 0; b < blocks; ++b) threads.emplace_back(runBlock, b);
    for (auto& t : threads) t.join();
  });
}
}  // namespace coll::emu
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
