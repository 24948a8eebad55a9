// peer_barrier.cu — see peer_barrier.h.  One block; thread t waits for
// ranks t, t + blockDim, ...  Flags only grow, so a late reader of an old
// value waits, and one that sees a newer value (the peer is ahead) passes.
#include "peer_barrier.h"
#include "coll/block_shared.h"
#include "coll/kernel_launch.h"
#include "flag_sync.cuh"

namespace coll::p2p {
namespace {

__global__ void barrierKernel(unsigned long long* counter, unsigned long long* const* flags, int nranks, int rank,
                              CallSig sig, unsigned long long timeoutNs, unsigned long long* error) {
  COLL_SHARED(unsigned long long, target);
  if (threadIdx.x == 0) {
    // Only this rank's barriers touch the counter; atomic so no cached copy
    // of an earlier value is ever read.
    target = atomicAdd(counter, 1ull) + 1;
    announceCall(flags[rank], sig);
    // Everything this stream wrote before (earlier kernels and copies) is
    // complete; the flag says so.
    arrive(flags[rank], target, sig);
  }
  __syncthreads();
  // A mismatch is recorded for the host; the stream's next operations still
  // run (they cannot be skipped from here), so that call's output is
  // undefined, and the communicator refuses every later device call.
  (void)waitForAll(flags, nranks, rank, target, sig, timeoutNs, error);
  __threadfence_system();
}

}  // namespace

cudaError_t loadBarrierKernel() { return cuda::load(barrierKernel); }

cudaError_t launchBarrier(unsigned long long* counter, unsigned long long* const* flags, int nranks, int rank,
                          CallSig sig, unsigned long long timeoutNs, unsigned long long* error, cudaStream_t s) {
  const unsigned threads = nranks < 128 ? 32u * ((static_cast<unsigned>(nranks) + 31u) / 32u) : 128u;
  return cuda::launch(barrierKernel, dim3(1), dim3(threads), 0, s, counter, flags, nranks, rank, sig, timeoutNs,
                      error);
}

}  // namespace coll::p2p
