// device_test_common.h — what the files of coll_device_coll_test share:
// the rank's globals, the check macros, and the checks of
// device_coll_checks.cu (asynchrony, two communicators on crossed streams,
// graphs, send/recv, the mix refusal, NULL recvbuff off a reduce's root),
// device_group_checks.cu (groups) and device_failure_checks.cu (mismatched
// arguments, timeouts).
#pragma once

#include <cuda_runtime.h>

#include <cstdio>
#include <cstdlib>
#include <vector>

#include "coll.h"
#include "coll/kernel_launch.h"

namespace devtest {

inline int gRank = 0, gN = 1;
inline long gFailures = 0;
// COLL_DEVICE_PATH=staged: device calls run the host executor on staged
// copies, so its reductions follow the host algorithm's order (a ring's,
// say), not rank order: the reference is then the same call on host
// buffers, cut into the same pieces.
inline bool gStaged = false;
inline collComm_t gComm = nullptr;

#define CUDA_OK(x)                                                                                 \
  do {                                                                                             \
    cudaError_t e_ = (x);                                                                          \
    if (e_ != cudaSuccess) {                                                                       \
      std::fprintf(stderr, "rank %d: %s:%d: %s: %s\n", gRank, __FILE__, __LINE__, #x, cudaGetErrorString(e_)); \
      std::exit(1);                                                                                \
    }                                                                                              \
  } while (0)

#define COLL_OK(x)                                                                                 \
  do {                                                                                             \
    collResult_t r_ = (x);                                                                         \
    if (r_ != collSuccess) {                                                                       \
      std::fprintf(stderr, "rank %d: %s:%d: %s: %s: %s (this thread's last error: %s)\n", gRank, __FILE__, __LINE__, \
                   #x, collGetErrorString(r_), collGetLastError(gComm), collGetLastError(nullptr)); \
      std::exit(1);                                                                                \
    }                                                                                              \
  } while (0)

// Setup through the default stream (cudaMemcpy from pageable memory,
// cudaMemset) may still be in flight when the call returns (CUDA's API
// synchronization notes: the DMA of a pageable copy, an asynchronous
// memset), and the streams the collectives run on are non-blocking, so not
// ordered after it: wait for it before a collective reads the buffers.  (On
// an H200 with 8 ranks under MPS, calls without this read stale inputs.)
inline void settleSetup() { CUDA_OK(cudaDeviceSynchronize()); }

// Operations queued on stream s so far, where the emulated runtime counts
// them (0 on a GPU).
inline uint64_t streamOpsQueued(cudaStream_t s) {
#if defined(COLL_DEVICE_EMULATION)
  return coll::emu::streamOpsQueued != nullptr ? coll::emu::streamOpsQueued(s) : 0;
#else
  (void)s;
  return 0;
#endif
}

// Whether a copy on another stream can run while a blocker holds a stream:
// not where the emulated runtime makes the process's streams share
// hardware work queues (COLL_EMU_WORK_QUEUES, the one_work_queue entries),
// where it would queue behind the blocker.
inline bool canPeekPastHeldStream() {
#if defined(COLL_DEVICE_EMULATION)
  const char* queues = std::getenv("COLL_EMU_WORK_QUEUES");
  return queues == nullptr || std::atoi(queues) == 0;
#else
  return true;
#endif
}

// Pinned host bytes allocated in this process now, where the emulated
// runtime counts them (0 on a GPU).
inline uint64_t pinnedBytesNow() {
#if defined(COLL_DEVICE_EMULATION)
  return coll::emu::pinnedBytes != nullptr ? coll::emu::pinnedBytes() : 0;
#else
  return 0;
#endif
}

// Counts a failure when a call queued more stream operations (since `before`,
// streamOpsQueued) than the device path's budget (schedule/device_stream_ops.h:
// a fuller stream would block the caller), unless COLL_DEVICE_PROGRAM=0 lifts
// it.  Only where the emulated runtime counts them.
void checkStreamOps(const char* what, uint64_t before, cudaStream_t s);

// A communicator of its own (device_failure_checks.cu), and its device side
// set up by one all-reduce on every rank.
collComm_t freshComm(int timeoutMs);
void setUpDevice(collComm_t c, cudaStream_t s);
// A fresh communicator with its device side set up on the first of two new
// non-blocking streams; destroyed (streams and communicator) at the end of
// the scope.
struct TwoStreamComm {
  explicit TwoStreamComm(int timeoutMs);
  ~TwoStreamComm();
  TwoStreamComm(const TwoStreamComm&) = delete;
  TwoStreamComm& operator=(const TwoStreamComm&) = delete;
  collComm_t comm;
  cudaStream_t s1 = nullptr, s2 = nullptr;
};

// The healthy communicator reports no asynchronous error after `what`.
inline void expectNoAsyncError(const char* what, collComm_t comm = gComm) {
  collResult_t async = collSuccess;
  COLL_OK(collCommGetAsyncError(comm, &async));
  if (async != collSuccess) {
    ++gFailures;
    std::fprintf(stderr, "rank %d: FAIL %s: async error %s: %s\n", gRank, what, collGetErrorString(async),
                 collGetLastError(comm));
  }
}

// Counts a failure, naming `what` and the first wrong element, unless
// device floats d[0, n) equal want(i).
template <class Want>
inline void expectFloats(const char* what, const float* d, size_t n, Want want) {
  std::vector<float> h(n);
  CUDA_OK(cudaMemcpy(h.data(), d, n * sizeof(float), cudaMemcpyDeviceToHost));
  for (size_t i = 0; i < n; ++i)
    if (h[i] != want(i)) {
      ++gFailures;
      std::fprintf(stderr, "rank %d: FAIL %s: [%zu] = %g, want %g\n", gRank, what, i, h[i], want(i));
      return;
    }
}

// Copies value(i), i in [0, n), into device floats d (the caller settles
// the setup before a collective reads them: settleSetup()).
template <class Value>
inline void uploadFloats(float* d, size_t n, Value value) {
  std::vector<float> h(n);
  for (size_t i = 0; i < n; ++i) h[i] = value(i);
  CUDA_OK(cudaMemcpy(d, h.data(), n * sizeof(float), cudaMemcpyHostToDevice));
}

// value(r) summed over every rank r, in rank order (a sum's exact result
// for the small integers the checks use).
template <class Value>
inline float sumOverRanks(Value value) {
  float w = 0;
  for (int r = 0; r < gN; ++r) w += value(r);
  return w;
}

// Each failure is printed and counted in gFailures.
void testAsync(cudaStream_t s);
void testPreMulLifetime(cudaStream_t s);
void testCrossedStreams();
void testOneCommTwoStreams();
void testStagedPoolBound();
void testGraph(cudaStream_t s);
void testSendRecv(cudaStream_t s);
void testMix();
void testReduceNullRecv(cudaStream_t s);
void testGroup(cudaStream_t s);
void testGroupDependent(cudaStream_t s);
void testGroupJoinsStreams();
void testGroupTwoStreamsInGraph();
void testGraphOrderedWithLive();
void testCapturesInterleaved();
void testGroupBudget(cudaStream_t s);
void testGroupOneKernel(cudaStream_t s);
void testMismatch(cudaStream_t s);
void testTimeout(cudaStream_t s);

}  // namespace devtest
