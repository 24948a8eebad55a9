// program_rank.h — what nccl_program's checks share: failure reports, and
// a rank's memory (device memory and a stream where the CUDA runtime has a
// device, else host memory), used through NCCL's API and the CUDA runtime
// only, as any NCCL program would.
#pragma once

#include <nccl.h>

#include <atomic>
#include <cstddef>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#ifndef NCCL_PROGRAM_NO_CUDA
#include <cuda_runtime.h>
#endif

namespace ncclprog {

extern std::atomic<int> failures;
// Counts a failure and prints it with the rank and file:line.
void report(int rank, const char* file, int line, const std::string& what);

#define NCCLPROG_HERE_ (__builtin_strrchr(__FILE__, '/') ? __builtin_strrchr(__FILE__, '/') + 1 : __FILE__)
#define EXPECT_RESULT(rank, comm, cmd, want)                                                                     \
  do {                                                                                                           \
    ncclResult_t r_ = (cmd);                                                                                     \
    if (r_ != (want))                                                                                            \
      ::ncclprog::report(rank, NCCLPROG_HERE_, __LINE__,                                                         \
                         std::string(#cmd) + " -> " + ncclGetErrorString(r_) + " (" + std::to_string(r_) +     \
                             "), wanted " + std::to_string(want) + "; last error: " + ncclGetLastError(comm));  \
  } while (0)
#define OK(rank, comm, cmd) EXPECT_RESULT(rank, comm, cmd, ncclSuccess)
#define CHECK(rank, cond, msg)                                                                         \
  do {                                                                                                 \
    if (!(cond)) ::ncclprog::report(rank, NCCLPROG_HERE_, __LINE__, std::string(#cond) + ": " + (msg)); \
  } while (0)

// Whether buffers are device memory: the CUDA runtime has a device and
// NCCL_PROGRAM_HOST is not set.
bool useDevice();

struct Rank {
  int rank = 0, nranks = 0;
  bool device = false;
  cudaStream_t stream = nullptr;
  ncclComm_t comm = nullptr;

  void select() {
#ifndef NCCL_PROGRAM_NO_CUDA
    if (!device) return;
    int n = 1;
    cudaGetDeviceCount(&n);
    cudaSetDevice(rank % n);
#endif
  }
  void makeStream() {
#ifndef NCCL_PROGRAM_NO_CUDA
    if (device) cudaStreamCreate(&stream);
#endif
  }
  void* alloc(size_t bytes) {
#ifndef NCCL_PROGRAM_NO_CUDA
    if (device) {
      void* p = nullptr;
      if (cudaMalloc(&p, bytes ? bytes : 1) != cudaSuccess) report(rank, NCCLPROG_HERE_, __LINE__, "cudaMalloc failed");
      return p;
    }
#endif
    return std::calloc(bytes ? bytes : 1, 1);
  }
  void release(void* p) {
#ifndef NCCL_PROGRAM_NO_CUDA
    if (device) {
      cudaFree(p);
      return;
    }
#endif
    std::free(p);
  }
  void put(void* dst, const void* src, size_t bytes) {
#ifndef NCCL_PROGRAM_NO_CUDA
    if (device) {
      cudaMemcpy(dst, src, bytes, cudaMemcpyHostToDevice);
      return;
    }
#endif
    std::memcpy(dst, src, bytes);
  }
  // After the stream's work: the result as the host sees it.
  void get(void* dst, const void* src, size_t bytes) {
#ifndef NCCL_PROGRAM_NO_CUDA
    if (device) {
      if (cudaStreamSynchronize(stream) != cudaSuccess) report(rank, NCCLPROG_HERE_, __LINE__, "cudaStreamSynchronize failed");
      cudaMemcpy(dst, src, bytes, cudaMemcpyDeviceToHost);
      return;
    }
#endif
    std::memcpy(dst, src, bytes);
  }
  void sync() {
#ifndef NCCL_PROGRAM_NO_CUDA
    if (device) cudaStreamSynchronize(stream);
#endif
  }
};

// A typed buffer pair (host copy + the rank's memory).
template <typename T>
struct Buf {
  Rank& r;
  std::vector<T> host;
  void* mem;
  Buf(Rank& rk, size_t n) : r(rk), host(n), mem(rk.alloc(n * sizeof(T))) {}
  ~Buf() { r.release(mem); }
  void upload() { r.put(mem, host.data(), host.size() * sizeof(T)); }
  std::vector<T>& download() {
    r.get(host.data(), mem, host.size() * sizeof(T));
    return host;
  }
};

}  // namespace ncclprog
