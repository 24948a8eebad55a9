// peer_sendrecv.cu — see peer_sendrecv.h.
#include <cstring>

#include "peer_sendrecv.h"
#include "coll/block_shared.h"
#include "coll/kernel_launch.h"
#include "flag_sync.cuh"

namespace coll::p2p {
namespace {

constexpr unsigned kThreads = 512;

// Copies n bytes with 16-byte words when both ends allow it, four loads
// in flight per thread before their stores (one at a time left a block's
// copy bound by the loads' latency).
__device__ void blockCopy(char* dst, const char* src, size_t n) {
  const bool vec = ((reinterpret_cast<uintptr_t>(dst) | reinterpret_cast<uintptr_t>(src)) & 15) == 0;
  size_t done = 0;
  if (vec) {
    const size_t words = n / 16, step = blockDim.x;
    auto* d = reinterpret_cast<uint4*>(dst);
    const auto* s = reinterpret_cast<const uint4*>(src);
    size_t i = threadIdx.x;
    for (; i + 3 * step < words; i += 4 * step) {
      const uint4 a = s[i], b = s[i + step], c = s[i + 2 * step], e = s[i + 3 * step];
      d[i] = a;
      d[i + step] = b;
      d[i + 2 * step] = c;
      d[i + 3 * step] = e;
    }
    for (; i < words; i += step) d[i] = s[i];
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
  // Which (direction, peer) this block serves: the (blockIdx / channels)-th
  // distinct one in op order (every block derives the same list), and which
  // of its channels: group blockIdx % channels, g + channels, ...
  COLL_SHARED(Lane, lane);
  COLL_SHARED(bool, ready);
  const int blocksPerLane = l.channels, group = int(blockIdx.x) % blocksPerLane;
  if (threadIdx.x == 0) {
    const int want = int(blockIdx.x) / blocksPerLane;
    int found = -1;
    for (int i = 0; i < l.nops && found < want; ++i) {
      bool seen = false;
      for (int j = 0; j < i && !seen; ++j)
        seen = l.ops[j].isSend == l.ops[i].isSend && l.ops[j].peer == l.ops[i].peer;
      if (!seen && ++found == want) lane = Lane{l.ops[i].isSend, l.ops[i].peer};
    }
  }
  __syncthreads();
  const int me = l.rank, p = lane.peer, n = l.nranks;
  constexpr int C = kP2pChannels;
  auto words = [&](int r) { return reinterpret_cast<unsigned long long*>(l.bases[r] + l.ctlOffset); };
  // Channel c of (s -> r): sent is words(s)[r C + c]; acked is
  // words(r)[n C + s C + c]; the size of the op of its chunk idx is
  // words(s)[2 n C + (r C + c) kP2pSlots + idx % kP2pSlots]; its mailbox is
  // at (r C + c) kP2pSlots slots into s's mailboxes.
  const int s = lane.isSend ? me : p, r = lane.isSend ? p : me;
  auto mineOf = [&](int c) { return lane.isSend ? &words(me)[r * C + c] : &words(me)[n * C + s * C + c]; };
  auto theirsOf = [&](int c) -> const unsigned long long* {
    return lane.isSend ? &words(p)[n * C + s * C + c] : &words(p)[r * C + c];
  };
  auto sizeWord = [&](int c, unsigned long long idx) {
    return &words(s)[2 * n * C + (r * C + c) * kP2pSlots + idx % kP2pSlots];
  };
  char* const mail = l.bases[s] + l.mailOffset + size_t(r) * C * kP2pSlots * kP2pSlotBytes;
  unsigned long long next[C];  // this block's channels' chunk counters (only this block writes them)
  for (int c = group; c < C; c += blocksPerLane) next[c] = *reinterpret_cast<volatile unsigned long long*>(mineOf(c));
  bool failed = false;  // the same in every thread: read from `ready` between two barriers
  for (int i = 0; i < l.nops && !failed; ++i) {
    const P2pOp& op = l.ops[i];
    if (op.isSend != lane.isSend || op.peer != p) continue;
    size_t j = 0;  // the op's chunk number: its channel is j % C
    for (size_t off = 0; off < op.bytes; off += kP2pSlotBytes, ++j) {
      const int c = int(j % C);
      if (c % blocksPerLane != group) continue;
      const unsigned long long idx = next[c]++;
      unsigned long long* mine = mineOf(c);
      const unsigned long long* theirs = theirsOf(c);
      const size_t len = op.bytes - off < kP2pSlotBytes ? op.bytes - off : kP2pSlotBytes;
      char* slot = mail + (size_t(c) * kP2pSlots + idx % kP2pSlots) * kP2pSlotBytes;
      if (threadIdx.x == 0) {
        // Send: the slot's previous chunk (idx - slots) must be consumed.
        // Recv: chunk idx must be written.
        const unsigned long long need = lane.isSend ? (idx + 1 > kP2pSlots ? idx + 1 - kP2pSlots : 0) : idx + 1;
        ready = waitAtLeast(theirs, need, l.timeoutNs, l.error, p);
        if (ready && !lane.isSend) {
          // Ordered after the acquire of `sent` above.
          const unsigned long long theirBytes = loadRelaxed(sizeWord(c, idx));
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
        if (lane.isSend) storeRelaxed(sizeWord(c, idx), op.bytes);
        publish(mine, idx + 1);  // the size too
      }
    }
  }
}

}  // namespace

cudaError_t loadP2pKernel() { return cuda::load(p2pKernel); }

cudaError_t launchP2p(const P2pLaunch& launch, cudaStream_t s) {
  if (launch.nops <= 0 || launch.nops > kP2pMaxOps) return cudaErrorInvalidValue;
  P2pLaunch l = launch;
  int lanes = 0;
  size_t largest = 0;
  for (int i = 0; i < l.nops; ++i) {
    bool seen = false;
    for (int j = 0; j < i && !seen; ++j) seen = l.ops[j].isSend == l.ops[i].isSend && l.ops[j].peer == l.ops[i].peer;
    if (!seen) ++lanes;
    largest = l.ops[i].bytes > largest ? l.ops[i].bytes : largest;
  }
  l.channels = p2pChannelsFor(largest);
  return cuda::launch(p2pKernel, dim3(static_cast<unsigned>(lanes * l.channels)), dim3(kThreads), 0, s, l);
}

}  // namespace coll::p2p
