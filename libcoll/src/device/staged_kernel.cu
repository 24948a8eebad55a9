// staged_kernel.cu — see staged_kernel.h.
#include "device/staged_kernel.h"

#include <cstdint>

#include "coll/block_shared.h"
#include "coll/kernel_launch.h"
#include "p2p/flag_sync.cuh"

namespace coll::device {
namespace {

constexpr unsigned kThreads = 512;

// A word of pinned memory the host writes: not from a cache line read
// before (the slot held another piece then, or another call).
template <class W>
__device__ __forceinline__ W loadFromHost(const W* p) {
#if defined(COLL_DEVICE_EMULATION)
  return *p;
#else
  return __ldcv(p);
#endif
}

template <class W>
__device__ __forceinline__ W loadWord(const W* p, bool fromHost) {
  return fromHost ? loadFromHost(p) : *p;
}

// n bytes, by the block, in words of W (dst and src aligned to it), the
// tail byte by byte.
template <class W>
__device__ void copyWords(unsigned char* dst, const unsigned char* src, unsigned long long n, bool fromHost) {
  const unsigned long long words = n / sizeof(W);
  W* d = reinterpret_cast<W*>(dst);
  const W* s = reinterpret_cast<const W*>(src);
  for (unsigned long long i = threadIdx.x; i < words; i += blockDim.x) d[i] = loadWord(s + i, fromHost);
  for (unsigned long long i = words * sizeof(W) + threadIdx.x; i < n; i += blockDim.x)
    dst[i] = loadWord(src + i, fromHost);
}

__device__ void copyBytes(unsigned char* dst, const unsigned char* src, unsigned long long n, bool fromHost) {
  const auto both = reinterpret_cast<uintptr_t>(dst) | reinterpret_cast<uintptr_t>(src);
  if (both % 16 == 0) {
    copyWords<uint4>(dst, src, n, fromHost);
  } else if (both % 8 == 0) {
    copyWords<unsigned long long>(dst, src, n, fromHost);
  } else if (both % 4 == 0) {
    copyWords<unsigned int>(dst, src, n, fromHost);
  } else {
    copyWords<unsigned char>(dst, src, n, fromHost);
  }
}

// Op i's description, read from the host-written header into the block's
// shared copy, a word per thread (each read crosses to host memory: in
// parallel, not one after another), then a barrier.
__device__ void readOp(const StagedKernelArgs& a, int i, StagedOpDesc* op) {
  constexpr unsigned kWords = sizeof(StagedOpDesc) / sizeof(unsigned long long);
  static_assert(sizeof(StagedOpDesc) % sizeof(unsigned long long) == 0);
  const auto* from = reinterpret_cast<const unsigned long long*>(a.ops + i);
  auto* to = reinterpret_cast<unsigned long long*>(op);
  for (unsigned w = threadIdx.x; w < kWords; w += blockDim.x) to[w] = loadFromHost(from + w);
  __syncthreads();
}

// This block's share [*lo, *hi) of a segment of n bytes: the blocks take
// equal runs of whole 256-byte lines (so each run keeps the segment's
// alignment), the last what is left.
__device__ void blockShare(unsigned long long n, unsigned long long* lo, unsigned long long* hi) {
  const unsigned long long blocks = gridDim.x;
  const unsigned long long lines = (n + 255) / 256;
  const unsigned long long run = (lines + blocks - 1) / blocks * 256;
  const unsigned long long start = blockIdx.x * run;
  *lo = start < n ? start : n;
  *hi = start + run < n ? start + run : n;
}

// This block's share of piece k of every op, between the user's buffers
// and its slot: in (to the slot) or out (to the user's).  Every thread of
// the block.
__device__ void copyPiece(const StagedKernelArgs& a, unsigned long long k, bool in, StagedOpDesc* op) {
  unsigned char* slot = a.slots[k % static_cast<unsigned long long>(a.nslots)];
  for (int i = 0; i < a.nops; ++i) {
    readOp(a, i, op);
    if (k < op->pieces) {
      const unsigned long long offset = k * op->pieceElems;
      const unsigned long long left = op->count - offset;
      const unsigned long long bytes = (left < op->pieceElems ? left : op->pieceElems) * op->elemSize;
      const unsigned blocks = in ? op->inBlocks : op->outBlocks;
      unsigned long long lo = 0, hi = 0;
      blockShare(bytes, &lo, &hi);
      for (unsigned b = 0; b < blocks && hi > lo; ++b) {
        const unsigned long long user = (b * op->count + offset) * op->elemSize + lo;
        unsigned char* staged = slot + (in ? op->inOffset : op->outOffset) + b * bytes + lo;
        if (in) copyBytes(staged, op->send + user, hi - lo, false);
        else copyBytes(op->recv + user, staged, hi - lo, true);
      }
    }
    __syncthreads();  // the shared op is read again next
  }
}

// Thread 0: once the block's copies are done (after a barrier), publish.
__device__ void announce(unsigned long long* word, unsigned long long value) {
  __syncthreads();
  if (threadIdx.x == 0) p2p::publish(word, value);
}

__global__ void __launch_bounds__(kThreads) stagedCallKernel(StagedKernelArgs a) {
  COLL_SHARED(unsigned long long, run);
  COLL_SHARED(int, skipped);
  COLL_SHARED(StagedOpDesc, op);
  StagedSlotControl* c = a.control;
  if (threadIdx.x == 0) {
    run = p2p::loadAcquire(&c->posted);
    skipped = 0;
  }
  // The device pre-mul scalars, for the host executor (a kernel before the
  // call that writes one is done: stream order); block 0, before its
  // first ready.
  for (int j = static_cast<int>(threadIdx.x); blockIdx.x == 0 && j < a.nscalars; j += static_cast<int>(blockDim.x)) {
    const auto* from = static_cast<const unsigned char*>(a.scalars[j].from);
    unsigned char* to = a.slots[0] + a.scalars[j].toOffset;
    for (unsigned long long b = 0; b < a.scalars[j].bytes; ++b) to[b] = from[b];
  }
  __syncthreads();
  unsigned long long* ready = &c->ready[blockIdx.x];
  copyPiece(a, 0, true, &op);
  announce(ready, 1);
  for (unsigned long long k = 0; k < a.pieces; ++k) {
    // Piece k + 1's slot held piece k + 1 - nslots <= k - 1 before.  This
    // block copied its share of that one out last iteration; its copy in
    // writes the slot's input side only, which no block copies out; and
    // the proxy writes piece k + 1's output side only once every block has
    // announced it in (ready = k + 2), so after every block copied k - 1 out.
    if (k + 1 < a.pieces) {
      copyPiece(a, k + 1, true, &op);
      announce(ready, k + 2);
    }
    if (threadIdx.x == 0) {
      unsigned sleep = 64;
      while (p2p::loadAcquire(&c->finished) < k + 1) {
        __nanosleep(sleep);
        if (sleep < 4096) sleep *= 2;
      }
      skipped = p2p::loadAcquire(&c->skip) != 0;
    }
    __syncthreads();
    if (skipped) break;
    copyPiece(a, k, false, &op);
  }
  // This block's last access to the call: once every block's, the host may
  // reuse its slots.
  announce(&c->released[blockIdx.x], run);
}

}  // namespace

cudaError_t loadStagedKernel() { return cuda::load(stagedCallKernel); }

cudaError_t launchStagedCall(const StagedKernelArgs& a, cudaStream_t s) {
  if (a.control == nullptr || a.nslots < 1 || a.nslots > kStagedMaxSlots || a.nops < 1 || a.pieces < 1 ||
      a.nscalars < 0 || a.nscalars > kStagedMaxScalars || a.blocks < 1 || a.blocks > kStagedMaxBlocks)
    return cudaErrorInvalidValue;
  return cuda::launch(stagedCallKernel, dim3(static_cast<unsigned>(a.blocks)), dim3(kThreads), 0, s, a);
}

}  // namespace coll::device
