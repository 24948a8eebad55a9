// device_failure_checks.cu — the checks of coll_device_coll_test where a
// call fails on purpose: ranks that call with different arguments (count,
// op, root, send/recv sizes) and a call only rank 0 makes (the timeout), each
// on a fresh communicator (see device_coll_test.cu).
#include <algorithm>
#include <chrono>
#include <cstring>
#include <string>

#include "device_test_common.h"

namespace devtest {

// ------------------------------------------------ mismatched arguments

// A communicator of its own for each case (a mismatch fails it for good).
collComm_t freshComm(int timeoutMs) {
  collUniqueId id;
  std::memset(&id, 0, sizeof id);
  if (gRank == 0) COLL_OK(collGetUniqueId(&id));
  COLL_OK(collBroadcast(&id, &id, sizeof id, collUint8, 0, gComm, nullptr));
  collConfig_t cfg = COLL_CONFIG_INITIALIZER;
  cfg.timeoutMs = timeoutMs;
  collComm_t c = nullptr;
  COLL_OK(collCommInitRankConfig(&c, gN, id, gRank, &cfg));
  return c;
}

TwoStreamComm::TwoStreamComm(int timeoutMs) : comm(freshComm(timeoutMs)) {
  CUDA_OK(cudaStreamCreateWithFlags(&s1, cudaStreamNonBlocking));
  CUDA_OK(cudaStreamCreateWithFlags(&s2, cudaStreamNonBlocking));
  setUpDevice(comm, s1);
}

TwoStreamComm::~TwoStreamComm() {
  CUDA_OK(cudaStreamDestroy(s1));
  CUDA_OK(cudaStreamDestroy(s2));
  COLL_OK(collCommDestroy(comm));
}

// The communicator's device side (its P2P blocks, mapped by every rank) is
// set up at its first device call, on the host, by all ranks together: a
// case where only some ranks call makes one such call on every rank first.
void setUpDevice(collComm_t c, cudaStream_t s) {
  float* d = nullptr;
  CUDA_OK(cudaMalloc(&d, sizeof(float)));
  CUDA_OK(cudaMemset(d, 0, sizeof(float)));
  settleSetup();
  COLL_OK(collAllReduce(d, d, 1, collFloat32, collSum, c, s));
  CUDA_OK(cudaStreamSynchronize(s));
  CUDA_OK(cudaFree(d));
}

// What a rank sees after a call that fails on the device: the stream is
// synchronized, then the async error, the last message, and the result of a
// next device call (which must be refused).
struct AfterFailure {
  collResult_t async = collSuccess;
  std::string msg;
  collResult_t next = collSuccess;
};
static AfterFailure afterFailure(collComm_t c, cudaStream_t s) {
  AfterFailure a;
  CUDA_OK(cudaStreamSynchronize(s));
  COLL_OK(collCommGetAsyncError(c, &a.async));
  a.msg = collGetLastError(c);
  float* e = nullptr;
  CUDA_OK(cudaMalloc(&e, sizeof(float)));
  a.next = collAllReduce(e, e, 1, collFloat32, collSum, c, s);
  CUDA_OK(cudaStreamSynchronize(s));
  CUDA_OK(cudaFree(e));
  return a;
}

// Rank 0 calls with other arguments than the rest (`what` says which); every
// rank must learn it as collArgMismatch naming "different arguments", and
// refuse the next device call.  A count: rank 0's is oddCount, else twice
// the others'.
static void mismatchCase(const char* what, size_t count, cudaStream_t s, size_t oddCount = 0) {
  // Short enough that a wait for the timeout (not a mismatch found) ends
  // the case soon.
  collComm_t c = freshComm(20000);
  if (oddCount == 0) oddCount = 2 * count;
  const size_t most = std::max(count, oddCount);
  float* d = nullptr;
  CUDA_OK(cudaMalloc(&d, most * sizeof(float)));
  CUDA_OK(cudaMemset(d, 0, most * sizeof(float)));
  settleSetup();
  const bool odd = gRank == 0;
  collResult_t r = collSuccess;
  if (!std::strcmp(what, "count"))
    r = collAllReduce(d, d, odd ? oddCount : count, collFloat32, collSum, c, s);
  else if (!std::strcmp(what, "op"))
    r = collAllReduce(d, d, count, collFloat32, odd ? collMax : collSum, c, s);
  else  // root
    r = collBroadcast(d, d, count, collFloat32, odd ? 1 : 0, c, s);
  const AfterFailure a = afterFailure(c, s);
  if (r != collSuccess || a.async != collArgMismatch || a.msg.find("different arguments") == std::string::npos ||
      a.msg.find(what) == std::string::npos || a.next == collSuccess) {
    ++gFailures;
    std::fprintf(stderr, "rank %d: FAIL mismatched %s (count %zu): call %s, async %s, next call %s: %s\n", gRank, what,
                 count, collGetErrorString(r), collGetErrorString(a.async), collGetErrorString(a.next), a.msg.c_str());
  } else if (gRank == 0) {
    std::printf("mismatched %s, count %zu: %s\n", what, count, a.msg.c_str());
  }
  (void)collCommDestroy(c);
  CUDA_OK(cudaFree(d));
}

// Rank 0 sends 300000 bytes, rank 1 receives 100000: the receiver learns it
// from the first chunk.  The sender's chunks fit its mailbox, so it finishes
// and stays healthy; its teardown ends when rank 1 destroys its failed
// communicator (this one's short timeout only bounds it if that breaks).
static void sizeMismatchCase(cudaStream_t s) {
  collComm_t c = freshComm(5000);
  setUpDevice(c, s);
  const size_t sent = 300000, expected = 100000;
  char* d = nullptr;
  CUDA_OK(cudaMalloc(&d, sent));
  if (gRank == 0) COLL_OK(collSend(d, sent, collUint8, 1, c, s));
  if (gRank == 1) COLL_OK(collRecv(d, expected, collUint8, 0, c, s));
  CUDA_OK(cudaStreamSynchronize(s));
  if (gRank == 1) {
    collResult_t async = collSuccess;
    COLL_OK(collCommGetAsyncError(c, &async));
    const std::string msg = collGetLastError(c);
    if (async != collArgMismatch || msg.find("count 300000 (rank 0) vs 100000 (rank 1)") == std::string::npos) {
      ++gFailures;
      std::fprintf(stderr, "rank 1: FAIL send/recv of different sizes: async %s: %s\n", collGetErrorString(async),
                   msg.c_str());
    } else {
      std::printf("send/recv of different sizes: %s\n", msg.c_str());
    }
  }
  (void)collCommDestroy(c);
  CUDA_OK(cudaFree(d));
}

// ------------------------------------------------------------- timeouts

// Only rank 0 calls; the others never do.  Its device wait must give up
// after the communicator's timeout (the stream completes, the host never
// hangs) and report collTimeout naming every other rank as stuck; later
// device calls are refused.  On the host-staged path the proxy's host
// collective times out instead (the host executor's message names the rank
// it waited for), and the call's other pieces are finished unrun: the
// stream still completes after about one timeout.  The other ranks wait on
// the host barrier below meanwhile.
static void timeoutCase(const char* what, size_t count, cudaStream_t s) {
  const int timeoutMs = 1500;
  collComm_t c = freshComm(timeoutMs);
  float* d = nullptr;
  CUDA_OK(cudaMalloc(&d, count * sizeof(float)));
  CUDA_OK(cudaMemset(d, 0, count * sizeof(float)));
  setUpDevice(c, s);  // not what this case times
  // Every other rank is absent, and the report names them all ("1, 2, 3").
  std::string absent = "1";
  for (int r = 2; r < gN; ++r) absent += ", " + std::to_string(r);
  if (gRank == 0) {
    const auto t0 = std::chrono::steady_clock::now();
    const collResult_t r = collAllReduce(d, d, count, collFloat32, collSum, c, s);
    const double callS = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    CUDA_OK(cudaStreamSynchronize(s));
    const double syncS = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    const AfterFailure a = afterFailure(c, s);
    // The call returns at once (it only enqueues); the stream finishes
    // after about the timeout, well before 4x of it.
    const std::string named = gStaged ? "(COLL_TIMEOUT), waiting for rank " : "rank(s) " + absent + " (did not arrive)";
    if (r != collSuccess || callS > 0.5 || syncS < 0.9 * timeoutMs / 1e3 || syncS > 4.0 * timeoutMs / 1e3 ||
        a.async != collTimeout || a.msg.find("timed out") == std::string::npos ||
        a.msg.find(named) == std::string::npos || a.next == collSuccess) {
      ++gFailures;
      std::fprintf(stderr, "rank 0: FAIL %s all-reduce with absent peers: call %s in %.3f s, stream done after %.2f s, "
                   "async %s, next call %s: %s\n", what, collGetErrorString(r), callS, syncS,
                   collGetErrorString(a.async), collGetErrorString(a.next), a.msg.c_str());
    } else {
      std::printf("%s all-reduce, peers absent: stream done after %.2f s (timeout %d ms): %s\n", what, syncS, timeoutMs,
                  a.msg.c_str());
    }
  }
  // Everyone meets on the healthy communicator before dropping this one (a
  // rank that destroyed it while rank 0 still waits would close its socket
  // connections, and rank 0 would see a peer gone instead of a timeout),
  // and again after it, so that the next case's setup starts together.
  int one = 1, sum = 0;
  COLL_OK(collAllReduce(&one, &sum, 1, collInt32, collSum, gComm, nullptr));
  // The others' communicator is healthy, and their teardown meets rank 0,
  // whose failed one skips that: rank 0's destroy tells them, so they are
  // done well before their own timeout would end the wait.
  const auto d0 = std::chrono::steady_clock::now();
  (void)collCommDestroy(c);
  const double destroyS = std::chrono::duration<double>(std::chrono::steady_clock::now() - d0).count();
  if (gRank != 0 && destroyS > 0.75 * timeoutMs / 1e3) {
    ++gFailures;
    std::fprintf(stderr, "rank %d: FAIL %s: destroying the communicator took %.2f s (timeout %d ms): rank 0's "
                 "failure was not passed on\n", gRank, what, destroyS, timeoutMs);
  }
  CUDA_OK(cudaFree(d));
  COLL_OK(collAllReduce(&one, &sum, 1, collInt32, collSum, gComm, nullptr));
}

void testTimeout(cudaStream_t s) {
  if (gN < 2) return;
  const long before = gFailures;
  if (gStaged) {
    timeoutCase("host-staged", 1 << 20, s);  // 4 MiB: one piece, or many when COLL_STAGED_PIECE_BYTES is small
  } else {
    timeoutCase("one-launch", 100, s);         // the small kernel (LL when COLL_DEVICE_LL_BYTES allows)
    timeoutCase("staged-region", 1 << 20, s);  // a barrier kernel
  }
  if (gRank == 0) std::printf("device timeouts: %s\n", gFailures == before ? "ok" : "FAILED");
}

void testMismatch(cudaStream_t s) {
  if (gN < 2 || gStaged) return;  // staged: the host executor's own check (host tests)
  const long before = gFailures;
  mismatchCase("count", 100, s);       // one-launch kernel (LL when COLL_DEVICE_LL_BYTES allows)
  // Rank 0 in the one-launch kernel, the others in the staged regions'
  // barriers (or the program kernel): each finds the other in the same call
  // with other arguments while it waits for it.
  mismatchCase("count", 1 << 18, s, 100);
  mismatchCase("op", 1 << 20, s);      // staged regions, barrier kernels
  mismatchCase("root", 1 << 16, s);
  sizeMismatchCase(s);
  if (gRank == 0) std::printf("mismatched arguments: %s\n", gFailures == before ? "ok" : "FAILED");
}

}  // namespace devtest
