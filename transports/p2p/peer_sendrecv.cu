// peer_sendrecv.cu — see peer_sendrecv.h.
#include <cstring>

#include "peer_sendrecv.h"
#include "coll/block_shared.h"
#include "coll/kernel_launch.h"
#include "flag_sync.cuh"

namespace coll::p2p {
namespace {

constexpr unsigned kThreads = 512;

// Copies n bytes with 16-byte words when both ends allow it.
__device__ void blockCopy(char* dst, const char* src, size_t n) {
  const bool vec = ((reinterpret_cast<uintptr_t>(dst) | reinterpret_cast<uintptr_t>(src)) & 15) == 0;
  size_t done = 0;
  if (vec) {
    const size_t words = n / 16;
    auto* d = reinterpret_cast<uint4*>(dst);
    const auto* s = reinterpret_cast<const uint4*>(src);
    for (size_t i = threadIdx.x; i < words; i += blockDim.x) d[i] = s[i];
    done = words * 16;
  }
  for (size_t i = done + threadIdx.x; i < n; i += blockDim.x) dst[i] = src[i];
}

// A bounded wait of one thread for *flag >= target; false on timeout (then
// recorded in *error naming `who`), or when *error says the communicator
// failed already (read every kErrorPollNs, as waitForAll does).
__device__ bool waitAtLeast(const unsigned long long* flag, unsigned long long target, unsigned long long timeoutNs,
                            unsigned long long* error, int who) {
  const unsigned long long start = globalNs();
  unsigned long long nextErrorPoll = start + kErrorPollNs;
  unsigned sleep = 32;
  while (loadAcquire(flag) < target) {
    const unsigned long long now = globalNs();
    if (now >= nextErrorPoll) {
      nextErrorPoll = now + kErrorPollNs;
      if (loadRelaxed(error) != 0) return false;
    }
    if (now - start > timeoutNs) {
      atomicCAS(error, 0ull, (1ull << 32) | static_cast<unsigned long long>(who + 1));
      __threadfence_system();
      return false;
    }
    __nanosleep(sleep);
    if (sleep < 512) sleep *= 2;
  }
  return true;
}

struct Lane {
  int isSend;
  int peer;
};

__global__ void __launch_bounds__(kThreads) p2pKernel(P2pLaunch l) {
  // Which (direction, peer) this block serves: the blockIdx-th distinct one
  // in op order (every block derives the same list).
  COLL_SHARED(Lane, lane);
  COLL_SHARED(bool, ready);
  if (threadIdx.x == 0) {
    int found = -1;
    for (int i = 0; i < l.nops && found < int(blockIdx.x); ++i) {
      bool seen = false;
      for (int j = 0; j < i && !seen; ++j)
        seen = l.ops[j].isSend == l.ops[i].isSend && l.ops[j].peer == l.ops[i].peer;
      if (!seen && ++found == int(blockIdx.x)) lane = Lane{l.ops[i].isSend, l.ops[i].peer};
    }
  }
  __syncthreads();
  const int me = l.rank, p = lane.peer, n = l.nranks;
  auto words = [&](int r) { return reinterpret_cast<unsigned long long*>(l.bases[r] + l.ctlOffset); };
  // sent[s->r] is words(s)[r]; acked[r<-s] is words(r)[n + s]; the size of
  // the op of chunk idx (s -> r) is words(s)[2n + r * kP2pSlots + idx % kP2pSlots].
  unsigned long long* mine = lane.isSend ? &words(me)[p] : &words(me)[n + p];
  const unsigned long long* theirs = lane.isSend ? &words(p)[n + me] : &words(p)[me];
  // Mailbox (s -> r) in s's block.
  char* mail = lane.isSend ? l.bases[me] + l.mailOffset + size_t(p) * kP2pSlots * kP2pSlotBytes
                           : l.bases[p] + l.mailOffset + size_t(me) * kP2pSlots * kP2pSlotBytes;
  unsigned long long idx = *reinterpret_cast<volatile unsigned long long*>(mine);  // only this block writes it
  bool failed = false;  // the same in every thread: read from `ready` between two barriers
  for (int i = 0; i < l.nops && !failed; ++i) {
    const P2pOp& op = l.ops[i];
    if (op.isSend != lane.isSend || op.peer != p) continue;
    for (size_t off = 0; off < op.bytes; off += kP2pSlotBytes, ++idx) {
      const size_t len = op.bytes - off < kP2pSlotBytes ? op.bytes - off : kP2pSlotBytes;
      char* slot = mail + (idx % kP2pSlots) * kP2pSlotBytes;
      if (threadIdx.x == 0) {
        // Send: the slot's previous chunk (idx - slots) must be consumed.
        // Recv: chunk idx must be written.
        const unsigned long long need = lane.isSend ? (idx + 1 > kP2pSlots ? idx + 1 - kP2pSlots : 0) : idx + 1;
        ready = waitAtLeast(theirs, need, l.timeoutNs, l.error, p);
        if (ready && !lane.isSend) {
          // Ordered after the acquire of `sent` above.
          const unsigned long long theirBytes = loadRelaxed(&words(p)[2 * n + me * kP2pSlots + idx % kP2pSlots]);
          if (theirBytes != op.bytes) {
            recordMismatch(reinterpret_cast<unsigned long long*>(l.bases[me]), l.error, p,
                           CallSig{l.recvSigWord, op.bytes}, l.sendSigWord, theirBytes);
            ready = false;
          }
        }
      }
      __syncthreads();
      const bool go = ready;
      __syncthreads();  // everyone has read `ready` before thread 0 writes it again
      if (!go) {
        failed = true;
        break;
      }
      if (lane.isSend) blockCopy(slot, static_cast<const char*>(op.buf) + off, len);
      else blockCopy(static_cast<char*>(op.buf) + off, slot, len);
      __syncthreads();
      if (threadIdx.x == 0) {
        if (lane.isSend) storeRelaxed(&words(me)[2 * n + p * kP2pSlots + idx % kP2pSlots], op.bytes);
        publish(mine, idx + 1);  // the size too
      }
    }
  }
}

}  // namespace

cudaError_t loadP2pKernel() { return cuda::load(p2pKernel); }

cudaError_t launchP2p(const P2pLaunch& l, cudaStream_t s) {
  if (l.nops <= 0 || l.nops > kP2pMaxOps) return cudaErrorInvalidValue;
  int lanes = 0;
  for (int i = 0; i < l.nops; ++i) {
    bool seen = false;
    for (int j = 0; j < i && !seen; ++j) seen = l.ops[j].isSend == l.ops[i].isSend && l.ops[j].peer == l.ops[i].peer;
    if (!seen) ++lanes;
  }
  return cuda::launch(p2pKernel, dim3(static_cast<unsigned>(lanes)), dim3(kThreads), 0, s, l);
}

}  // namespace coll::p2p
