// cuda_emulation.h — just enough of the CUDA built-ins to run the device
// kernels' source on the host (g++, no GPU).  Included first by every .cu
// file built for the host: by the emulation build (-DCOLL_CUDA_EMULATION=ON
// forces it onto each .cu file, and the emulated runtime of this folder
// stands in for libcudart) and by the kernel tests of tests/device_emu.
//
// A block is a set of host threads, one per CUDA thread: blockDim.x is the
// launch's block size capped at COLL_EMU_BLOCK_THREADS (default 4), so the
// kernels' block-stride loops, their __syncthreads (a std::barrier) and
// their shared variables (COLL_SHARED: one per block, allocated on first
// use and filled with 0xCD like memory nobody wrote) run with real
// concurrency, where ASan and TSan see them.  Kernels must therefore take
// the block size from blockDim, never from the launch's constant.  All
// blocks of a grid run at once, each thread on its own host thread: a block
// may wait for a block of another rank's grid, so none may wait for a free
// thread (grid_threads.h keeps the host threads for the next launch,
// except under TSan).  Plain `__shared__` does not compile here (it would
// be one variable per host thread): the kernels use COLL_SHARED
// (coll/block_shared.h) and the dynamic shared memory of the launch through
// coll::emu::dynamicShared().
//
// Two ways to run a grid:
//   * default: coll::cuda::launch queues the grid on an emulated stream
//     (the runtime of this folder, weak coll::emu::enqueue);
//   * COLL_EMU_PROCESS_BLOCK: a rank is a process (fork) and a launch runs
//     its single block to completion at once, on the calling process (the
//     one-launch kernels' test).
// Memory operations that order ranks use C++ atomics (flag_sync.cuh's
// COLL_DEVICE_EMULATION branch).  This checks the kernels' logic
// (indexing, alignment paths, step interpretation, the flag and LL
// protocols, the block's barriers and shared variables) and the host code
// around them, not the GPU's memory model or performance.
#pragma once

#define COLL_DEVICE_EMULATION 1
#define COLL_CUDA_SOFT_CONVERT 1  // fp16/bf16 through the shared conversions

#include <cuda_runtime.h>

#include <atomic>
#include <barrier>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>
#include <type_traits>
#include <unordered_map>
#include <vector>

#include "grid_threads.h"

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

namespace coll::emu {

// What the threads of one block share: their barrier, their COLL_SHARED
// variables and the launch's dynamic shared memory.
class Block {
 public:
  Block(unsigned threads, size_t dynamicBytes) : barrier_(threads, Phase{this}), dynamic_(words(dynamicBytes)) {
    std::memset(dynamic_.data(), kUnwritten, dynamic_.size() * sizeof(std::max_align_t));
  }
  // __syncthreads_or: whether any thread's predicate was non-zero.  The
  // barrier's completion (after the last arrival, before any thread goes
  // on) takes this phase's answer, and no thread can reach the next phase's
  // completion before every thread has read it.
  int sync(int predicate = 0) {
    if (predicate != 0) any_.store(1, std::memory_order_relaxed);
    barrier_.arrive_and_wait();
    return answer_;
  }
  // The block's variable declared at `key` (one per declaration), made on
  // first use.
  void* variable(const void* key, size_t bytes) {
    std::lock_guard<std::mutex> lock(m_);
    std::vector<std::max_align_t>& v = variables_[key];
    if (v.empty()) {
      v.resize(words(bytes));
      std::memset(v.data(), kUnwritten, v.size() * sizeof(std::max_align_t));
    }
    return v.data();
  }
  void* dynamic() { return dynamic_.data(); }

 private:
  static constexpr int kUnwritten = 0xCD;
  // At least one word: an empty vector is a variable not made yet.
  static size_t words(size_t bytes) { return (bytes + sizeof(std::max_align_t) - 1) / sizeof(std::max_align_t) + 1; }
  struct Phase {
    Block* block;
    void operator()() noexcept { block->answer_ = block->any_.exchange(0, std::memory_order_relaxed); }
  };
  std::atomic<int> any_{0};
  int answer_ = 0;
  std::barrier<Phase> barrier_;
  std::mutex m_;
  std::unordered_map<const void*, std::vector<std::max_align_t>> variables_;
  std::vector<std::max_align_t> dynamic_;
};
inline thread_local Block* currentBlock = nullptr;

inline void* dynamicShared() { return currentBlock->dynamic(); }

// Host threads per emulated block: the launch's block size, at most
// COLL_EMU_BLOCK_THREADS (1..64, default 4).
inline unsigned blockThreads(dim3 block) {
  static const unsigned cap = [] {
    const char* e = std::getenv("COLL_EMU_BLOCK_THREADS");
    const long v = e != nullptr ? std::strtol(e, nullptr, 10) : 4;
    return static_cast<unsigned>(v < 1 ? 1 : v > 64 ? 64 : v);
  }();
  const unsigned requested = block.x * block.y * block.z;
  return requested < cap ? requested : cap;
}

// Runs body() as every thread of a grid of `blocks` blocks of `threads`
// threads, all at once; returns when all have returned.
inline void runGrid(unsigned blocks, unsigned threads, size_t dynamicBytes, const std::function<void()>& body) {
  std::vector<std::unique_ptr<Block>> state;
  for (unsigned b = 0; b < blocks; ++b) state.push_back(std::make_unique<Block>(threads, dynamicBytes));
  auto runThread = [&](unsigned b, unsigned t) {
    blockIdx = uint3{b, 0, 0};
    gridDim = uint3{blocks, 1, 1};
    blockDim = uint3{threads, 1, 1};
    threadIdx = uint3{t, 0, 0};
    currentBlock = state[b].get();
    body();
    currentBlock = nullptr;
  };
  if (blocks * threads == 1) {
    runThread(0, 0);
    return;
  }
  std::vector<std::function<void()>> tasks;
  tasks.reserve(static_cast<size_t>(blocks) * threads);
  for (unsigned b = 0; b < blocks; ++b)
    for (unsigned t = 0; t < threads; ++t) tasks.emplace_back([&runThread, b, t] { runThread(b, t); });
  GridThreads::runAll(tasks);
}

#if defined(COLL_EMU_PROCESS_BLOCK)
// coll::cuda::launch (kernel_launch.h): the one block, run now.
template <class... P>
cudaError_t launch(void (*kernel)(P...), dim3 grid, dim3 block, size_t sharedBytes, cudaStream_t, P... args) {
  const unsigned threads = blockThreads(block);
  if (grid.x != 1 || grid.y != 1 || grid.z != 1 || threads == 0) return cudaErrorInvalidConfiguration;
  runGrid(1, threads, sharedBytes, [&] { kernel(args...); });
  return cudaSuccess;
}
#else
enum class NodeKind { Kernel = 1, Memcpy, Memset, Host, Event, EventWait };
// Queues `work` on the emulated stream (or appends it to the graph the
// stream is capturing).  Defined by the emulated runtime (runtime_*.cc of
// this folder); weak, so a test that runs kernels by hand links without it.
[[gnu::weak, gnu::visibility("default")]] cudaError_t enqueue(cudaStream_t stream, NodeKind kind,
                                                              std::function<void()> work);
// Operations queued on the stream so far (tests count what a call queues);
// 0 without the runtime.
[[gnu::weak, gnu::visibility("default")]] uint64_t streamOpsQueued(cudaStream_t stream);
// Bytes of pinned host memory (cudaHostAlloc) allocated now, in this
// process (tests bound what a pool keeps); 0 without the runtime.
[[gnu::weak, gnu::visibility("default")]] uint64_t pinnedBytes();

// coll::cuda::launch (kernel_launch.h): the grid, once the stream reaches
// the launch.  The arguments are copied now, as CUDA copies kernel
// parameters at launch.
template <class... P>
cudaError_t launch(void (*kernel)(P...), dim3 grid, dim3 block, size_t sharedBytes, cudaStream_t stream,
                   P... args) {
  if (enqueue == nullptr) return cudaErrorNotSupported;
  const unsigned threads = blockThreads(block);
  if (grid.x == 0 || grid.y != 1 || grid.z != 1 || threads == 0) return cudaErrorInvalidConfiguration;
  const unsigned blocks = grid.x;
  return enqueue(stream, NodeKind::Kernel,
                 [=] { runGrid(blocks, threads, sharedBytes, [&] { kernel(args...); }); });
}
#endif

}  // namespace coll::emu

inline void __syncthreads() { coll::emu::currentBlock->sync(); }
inline int __syncthreads_or(int predicate) { return coll::emu::currentBlock->sync(predicate); }

// COLL_SHARED(T, name) (coll/block_shared.h): the block's variable.
#define COLL_SHARED(T, name)                       \
  static constexpr char name##EmulationKey = 0;     \
  std::type_identity_t<T>& name =                   \
      *static_cast<std::type_identity_t<T>*>(coll::emu::currentBlock->variable(&name##EmulationKey, sizeof(T)))
// A plain __shared__ would be a variable per host thread, not per block.
#undef __shared__
#define __shared__ static_assert(false, "use COLL_SHARED (coll/block_shared.h) for a block's shared variable");

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
inline unsigned long long atomicOr(unsigned long long* p, unsigned long long v) {
  return std::atomic_ref<unsigned long long>(*p).fetch_or(v);
}
inline int atomicMin(int* p, int v) {
  std::atomic_ref<int> a(*p);
  int old = a.load();
  while (v < old && !a.compare_exchange_weak(old, v)) {
  }
  return old;
}
inline unsigned long long atomicCAS(unsigned long long* p, unsigned long long expected, unsigned long long desired) {
  std::atomic_ref<unsigned long long>(*p).compare_exchange_strong(expected, desired);
  return expected;  // the old value either way
}
