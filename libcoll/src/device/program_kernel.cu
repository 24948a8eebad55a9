// program_kernel.cu — see program_kernel.h.  The element math is the
// reduction kernels' own (one<>() / vecOp<>() of kernels/cuda/src/
// reduce_impl.cuh) in rank order with the result narrowed after every step,
// so the bits equal the other device paths' and the host reference's.
//
// Loads go through L2 only (ld.global.cg): a block reads the same region
// bytes again in later pieces after a peer rewrote them, and a stale L1 line
// must never answer.
#include <cstring>

#include "coll/block_shared.h"
#include "device/one_launch_common.cuh"
#include "device/program_kernel.h"
#include "p2p/flag_sync.cuh"

namespace coll::device {
namespace {

namespace kd = coll::kernels::device;
using kernels::DType;
using kernels::Op;
using sched::DevBuf;
using sched::DevStep;
using sched::DevStepKind;

constexpr int kUnroll = 4;  // independent 16-byte loads in flight per thread and source
// Kernel parameters may take 32764 bytes since CUDA 12.1 (Volta and newer).
static_assert(sizeof(ProgramLaunch) <= 32764, "ProgramLaunch must fit the kernel parameter space");

// The launch's dynamic shared memory: sBase[nranks], sFlag[nranks], sControl[nranks].
#if defined(COLL_DEVICE_EMULATION)
inline unsigned char* programShared() { return static_cast<unsigned char*>(coll::emu::dynamicShared()); }
#else
extern __shared__ __align__(16) unsigned char programSharedMemory[];
__device__ __forceinline__ unsigned char* programShared() { return programSharedMemory; }
#endif

template <class T>
__device__ __forceinline__ T loadCg(const T* p) {
  T v;
  if constexpr (sizeof(T) == 1) {
    const unsigned char b = __ldcg(reinterpret_cast<const unsigned char*>(p));
    memcpy(&v, &b, 1);
  } else if constexpr (sizeof(T) == 2) {
    const unsigned short b = __ldcg(reinterpret_cast<const unsigned short*>(p));
    memcpy(&v, &b, 2);
  } else if constexpr (sizeof(T) == 4) {
    const unsigned int b = __ldcg(reinterpret_cast<const unsigned int*>(p));
    memcpy(&v, &b, 4);
  } else if constexpr (sizeof(T) == 8) {
    const unsigned long long b = __ldcg(reinterpret_cast<const unsigned long long*>(p));
    memcpy(&v, &b, 8);
  } else {
    static_assert(sizeof(T) == 16, "loadCg: 1, 2, 4, 8 or 16 bytes");
    const uint4 b = __ldcg(reinterpret_cast<const uint4*>(p));
    memcpy(&v, &b, 16);
  }
  return v;
}

// Elements before the first 16-byte boundary of dst when every pointer in
// `others` is congruent to dst modulo 16 and that boundary falls between
// elements; else all n (no vector body).
template <class S>
__device__ __forceinline__ uint64_t vectorHead(const void* dst, const void* other, uint64_t n) {
  const uintptr_t d = reinterpret_cast<uintptr_t>(dst), o = reinterpret_cast<uintptr_t>(other);
  if (((d ^ o) & 15) != 0) return n;
  const uintptr_t mis = d & 15;
  if (mis % sizeof(S) != 0) return n;
  const uint64_t head = ((16 - mis) & 15) / sizeof(S);
  return head < n ? head : n;
}

// dst[0, n) = f(src[0, n)) by the whole block, f one vector (uint4) at a
// time where the pointers allow, else one element at a time.
template <class S, class VecF, class ElemF>
__device__ __forceinline__ void mapBlock(S* dst, const S* src, uint64_t n, VecF vf, ElemF ef) {
  const uint64_t head = vectorHead<S>(dst, src, n);
  for (uint64_t i = threadIdx.x; i < head; i += blockDim.x) dst[i] = ef(loadCg(src + i));
  if (head == n) return;
  constexpr uint64_t kPerVec = 16 / sizeof(S);
  const uint64_t nvec = (n - head) / kPerVec;
  uint4* vd = reinterpret_cast<uint4*>(dst + head);
  const uint4* vs = reinterpret_cast<const uint4*>(src + head);
  uint64_t i = threadIdx.x;
  for (; i + (kUnroll - 1) * blockDim.x < nvec; i += kUnroll * blockDim.x) {
    uint4 r[kUnroll];
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) r[u] = loadCg(vs + i + u * blockDim.x);
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) vd[i + u * blockDim.x] = vf(r[u]);
  }
  for (; i < nvec; i += blockDim.x) vd[i] = vf(loadCg(vs + i));
  for (uint64_t j = head + nvec * kPerVec + threadIdx.x; j < n; j += blockDim.x) dst[j] = ef(loadCg(src + j));
}

__device__ __forceinline__ void copyBlock(char* dst, const char* src, uint64_t bytes) {
  mapBlock<unsigned char>(reinterpret_cast<unsigned char*>(dst), reinterpret_cast<const unsigned char*>(src), bytes,
                          [](uint4 v) { return v; }, [](unsigned char b) { return b; });
}

// dst[0, n) = pre(src[0, n)).
template <DType D, Op O>
__device__ __forceinline__ void stageBlock(typename kd::Elem<D>::S* dst, const typename kd::Elem<D>::S* src, uint64_t n,
                                           const kd::Ctx<typename kd::Elem<D>::C>& c) {
  using S = typename kd::Elem<D>::S;
  mapBlock<S>(dst, src, n, [&](uint4 v) { return kd::vecOp<D, O, false, 16>(v, v, c); },
              [&](S x) { return kd::one<D, O, false>(S{}, x, c); });
}

// dst[0, n) = post(src_0 op src_1 op ... op src_{N-1}) in rank order, where
// src_r = base[r] + off (every rank's region at the same offset).
template <DType D, Op O>
__device__ __forceinline__ void reduceBlock(typename kd::Elem<D>::S* dst, char* const* base, uint64_t off, int nranks,
                                            uint64_t n, uint64_t divisor) {
  using S = typename kd::Elem<D>::S;
  using C = typename kd::Elem<D>::C;
  auto src = [&](int r) { return reinterpret_cast<const S*>(base[r] + off); };
  // The chain's context for step r (r >= 1), or for a lone rank.
  auto ctx = [&](int r) {
    kd::Ctx<C> c{};
    c.hasA = nranks > 1;
    c.pre = false;  // applied when staged
    c.post = r == nranks - 1 && divisor != 0;
    c.d = divisor;
    return c;
  };
  auto element = [&](uint64_t i) {
    S acc = loadCg(src(0) + i);
    if (nranks == 1) return kd::one<D, O, false>(S{}, acc, ctx(0));
    for (int r = 1; r < nranks; ++r) acc = kd::one<D, O, false>(acc, loadCg(src(r) + i), ctx(r));
    return acc;
  };
  const uint64_t head = vectorHead<S>(dst, src(0), n);
  for (uint64_t i = threadIdx.x; i < head; i += blockDim.x) dst[i] = element(i);
  if (head == n) return;
  constexpr uint64_t kPerVec = 16 / sizeof(S);
  const uint64_t nvec = (n - head) / kPerVec;
  uint4* vd = reinterpret_cast<uint4*>(dst + head);
  auto vsrc = [&](int r) { return reinterpret_cast<const uint4*>(src(r) + head); };
  uint64_t i = threadIdx.x;
  for (; i + (kUnroll - 1) * blockDim.x < nvec; i += kUnroll * blockDim.x) {
    uint4 acc[kUnroll];
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) acc[u] = loadCg(vsrc(0) + i + u * blockDim.x);
    if (nranks == 1) {
#pragma unroll
      for (int u = 0; u < kUnroll; ++u) acc[u] = kd::vecOp<D, O, false, 16>(acc[u], acc[u], ctx(0));
    }
    for (int r = 1; r < nranks; ++r) {
      uint4 x[kUnroll];
#pragma unroll
      for (int u = 0; u < kUnroll; ++u) x[u] = loadCg(vsrc(r) + i + u * blockDim.x);
      const kd::Ctx<C> c = ctx(r);
#pragma unroll
      for (int u = 0; u < kUnroll; ++u) acc[u] = kd::vecOp<D, O, false, 16>(acc[u], x[u], c);
    }
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) vd[i + u * blockDim.x] = acc[u];
  }
  for (; i < nvec; i += blockDim.x) {
    uint4 acc = loadCg(vsrc(0) + i);
    if (nranks == 1) acc = kd::vecOp<D, O, false, 16>(acc, acc, ctx(0));
    for (int r = 1; r < nranks; ++r) acc = kd::vecOp<D, O, false, 16>(acc, loadCg(vsrc(r) + i), ctx(r));
    vd[i] = acc;
  }
  for (uint64_t j = head + nvec * kPerVec + threadIdx.x; j < n; j += blockDim.x) dst[j] = element(j);
}

template <DType D, Op O>
__global__ void __launch_bounds__(kProgramThreads, 1) programKernel(ProgramLaunch L) {
  using S = typename kd::Elem<D>::S;
  // Scalars out of the parameter block once (its arrays are read by index
  // below, one step and one call at a time, into registers).
  const int nranks = L.nranks, rank = L.rank, channels = L.channels, ch = static_cast<int>(blockIdx.x);
  const int nsteps = L.nsteps;
  const uint64_t unit = L.unit, inputOffset = L.inputOffset, resultOffset = L.resultOffset;
  const unsigned long long timeoutNs = L.timeoutNs;
  unsigned long long* const error = L.error;
  unsigned long long* const control = L.control;

  char** sBase = reinterpret_cast<char**>(programShared());
  unsigned long long** sFlag = reinterpret_cast<unsigned long long**>(programShared()) + nranks;
  unsigned long long** sControl = sFlag + nranks;  // each rank's control block: the head of its P2P block
  for (int r = threadIdx.x; r < nranks; r += blockDim.x) {
    sBase[r] = L.bases[r];
    sFlag[r] = reinterpret_cast<unsigned long long*>(L.bases[r] + L.channelOffset + ch * kChannelStride);
    sControl[r] = reinterpret_cast<unsigned long long*>(L.bases[r]);
  }
  COLL_SHARED(unsigned long long, count);  // this channel's barriers so far (graph replays continue it)
  __syncthreads();
  volatile unsigned long long* counter = sFlag[rank] + p2p::kCounterWord;
  if (threadIdx.x == 0) count = *counter;
  __syncthreads();

  for (int i = 0; i < nsteps; ++i) {
    const DevStep st = L.steps[i];
    const ProgramCall c = L.calls[st.call];
    if (st.kind == DevStepKind::Barrier) {
      __syncthreads();  // the block's writes before the flag
      if (threadIdx.x == 0) {
        count = count + 1;
        if (ch == 0) p2p::announceCall(control, c.sig);  // one writer: block 0 (it meets every call's barriers)
        p2p::arrive(sFlag[rank], count, c.sig);
      }
      __syncthreads();
      if (!p2p::waitForAll(sFlag, nranks, rank, count, c.sig, timeoutNs, error, control, sControl)) break;
      continue;
    }
    auto region = [&](DevBuf b, int r) -> char* {
      switch (b) {
        case DevBuf::Send: return static_cast<char*>(const_cast<void*>(c.send));
        case DevBuf::Recv: return static_cast<char*>(c.recv);
        case DevBuf::Input: return sBase[r] + inputOffset;
        case DevBuf::Result: return sBase[r] + resultOffset;
      }
      return nullptr;
    };
    char* const dst = region(st.dst, rank) + st.dstOff;
    uint64_t lo = 0, hi = 0;
    for (uint64_t k = 0; sched::channelChunk(st, c.elemSize, unit, channels, ch, k, &lo, &hi); ++k) {
      if (st.kind == DevStepKind::Reduce) {
        const uint64_t off = (st.src == DevBuf::Input ? inputOffset : resultOffset) + st.srcOff + lo;
        reduceBlock<D, O>(reinterpret_cast<S*>(dst + lo), sBase, off, nranks, (hi - lo) / sizeof(S), c.divisor);
        continue;
      }
      const char* src = region(st.src, st.srcRank) + st.srcOff + lo;
      if (st.kind == DevStepKind::Stage && c.premul != 0)
        stageBlock<D, O>(reinterpret_cast<S*>(dst + lo), reinterpret_cast<const S*>(src), (hi - lo) / sizeof(S),
                         stageContext<D>(true, c.deviceScalar, c.scalarBits));
      else
        copyBlock(dst + lo, src, hi - lo);
    }
  }
  __syncthreads();
  if (threadIdx.x == 0) *counter = count;
}

template <DType D, Op O>
struct ProgramKernel {
  static auto kernel() { return &programKernel<D, O>; }
};

}  // namespace

cudaError_t loadProgramKernels() { return loadOneLaunchKernels<ProgramKernel>(); }

cudaError_t launchProgram(const ProgramLaunch& l, cudaStream_t s) {
  const auto fn = oneLaunchKernel<ProgramKernel>(l.dtype, l.op);
  if (fn == nullptr || l.channels < 1 || l.channels > kMaxChannels || l.nsteps < 0 || l.nsteps > kMaxProgramSteps ||
      l.ncalls < 0 || l.ncalls > kMaxProgramCalls || l.nranks < 1 || l.nranks > kMaxProgramRanks || l.unit == 0)
    return cudaErrorInvalidValue;
  if (l.nsteps == 0) return cudaSuccess;
  return cuda::launch(fn, dim3(static_cast<unsigned>(l.channels)), dim3(kProgramThreads), programSharedBytes(l.nranks),
                      s, l);
}

}  // namespace coll::device
