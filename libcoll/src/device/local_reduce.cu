// local_reduce.cu — see local_reduce.h.  The element math is the reduction
// kernels' (reduce_impl.cuh), so the bits equal the other device paths' and
// the host reference's.
#include <algorithm>
#include <cstring>
#include <type_traits>

#include "coll/block_shared.h"
#include "device/local_reduce.h"
#include "device/one_launch_common.cuh"

namespace coll::device {
namespace {

namespace kd = coll::kernels::device;
using kernels::DType;
using kernels::Op;
using sched::kLocalFan;

constexpr unsigned kThreads = 256;
constexpr unsigned kBlocksPerSm = 8;  // 2048 threads per SM
constexpr int kUnroll = 4;            // 16-byte vectors per thread per pass, each input's loads all in flight

// The combining step for input k >= 1 (the accumulator is `a`).
template <class C>
__device__ __forceinline__ kd::Ctx<C> stepContext(int k, int nsrc, uint64_t divisor) {
  kd::Ctx<C> c{};
  c.hasA = true;
  c.pre = false;
  c.post = k == nsrc - 1 && divisor != 0;
  c.d = divisor;
  return c;
}

// A lone input's own step: the post-op (and the rounding of every result,
// NaNs made canonical), as the other paths reduce a single staged input.
template <class C>
__device__ __forceinline__ kd::Ctx<C> loneContext(uint64_t divisor) {
  kd::Ctx<C> c{};
  c.hasA = false;
  c.pre = false;
  c.post = divisor != 0;
  c.d = divisor;
  return c;
}

// What a block's threads read by a runtime index, out of the parameters
// once: the pointers and each input's pre-multiply scalar.
template <class C>
struct LocalShared {
  const void* src[kLocalFan];
  void* dst[kLocalFan];
  C scale[kLocalFan];
};

// Kernel<D, O, Pre>: Pre compiles the per-input pre-multiply in (a
// pre-multiplied sum); without it the inputs are combined as they are.  The
// loops over inputs and outputs are not unrolled (one body for any count:
// the kernels of every dtype and op compile in reasonable time) and read
// the pointers from shared memory.
template <DType D, Op O, bool Pre>
__global__ void __launch_bounds__(kThreads) localReduceKernel(LocalReduceLaunch L) {
  using E = kd::Elem<D>;
  using S = typename E::S;
  using C = typename E::C;
  constexpr uint64_t kPerVec = 16 / sizeof(S);
  const int nsrc = L.nsrc, ndst = L.ndst;
  const uint32_t preMask = Pre ? L.preMask : 0u;
  COLL_SHARED(LocalShared<C>, sh);
  if (threadIdx.x == 0) {  // constant indices: the parameters are read in place, never copied to a thread's stack
#pragma unroll
    for (int k = 0; k < kLocalFan; ++k) {
      sh.src[k] = L.src[k];
      sh.dst[k] = L.dst[k];
      sh.scale[k] = stageContext<D>(((preMask >> k) & 1u) != 0, L.scalarPtr[k], L.scalarBits[k]).s;
    }
  }
  __syncthreads();
  const uint64_t tid = uint64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  const uint64_t stride = uint64_t(gridDim.x) * blockDim.x;
  // Input k's pre-multiply: a stage step (no accumulator) with its scalar.
  auto preOf = [&](int k) {
    kd::Ctx<C> c{};
    c.hasA = false;
    c.pre = true;
    c.post = false;
    c.s = sh.scale[k];
    return c;
  };
  auto hasPre = [&](int k) { return Pre && ((preMask >> k) & 1u) != 0; };
  const kd::Ctx<C> lone = loneContext<C>(L.divisor);
  auto src = [&](int k) { return static_cast<const S*>(sh.src[k]); };
  auto dst = [&](int k) { return static_cast<S*>(sh.dst[k]); };

  // One element (the head and the tail).  Input 0 starts the accumulator:
  // pre-multiplied (rounded) when asked, then, when it is the only input,
  // through its own step; else its bits as they are.
  auto element = [&](uint64_t i) {
    S acc = src(0)[i];
    if (hasPre(0)) acc = kd::one<D, O, false>(S{}, acc, preOf(0));
    if (nsrc == 1) acc = kd::one<D, O, false>(S{}, acc, lone);
#pragma unroll 1
    for (int k = 1; k < nsrc; ++k) {
      S x = src(k)[i];
      if (hasPre(k)) x = kd::one<D, O, false>(S{}, x, preOf(k));
      acc = kd::one<D, O, false>(acc, x, stepContext<C>(k, nsrc, L.divisor));
    }
#pragma unroll 1
    for (int k = 0; k < ndst; ++k) dst(k)[i] = acc;
  };
  const uint64_t tailBegin = L.head + L.nvec * kPerVec;
  for (uint64_t i = tid; i < L.head; i += stride) element(i);
  for (uint64_t i = tailBegin + tid; i < L.count; i += stride) element(i);

  // The vectors, kUnroll per thread per pass (each input's loads in flight
  // together).
  auto vsrc = [&](int k) { return reinterpret_cast<const uint4*>(src(k) + L.head); };
  auto vdst = [&](int k) { return reinterpret_cast<uint4*>(dst(k) + L.head); };
  auto vectors = [&](uint64_t i, auto units) {
    constexpr int U = decltype(units)::value;
    uint4 acc[U];
#pragma unroll
    for (int u = 0; u < U; ++u) acc[u] = vsrc(0)[i + u * stride];
    if (hasPre(0)) {
      const kd::Ctx<C> pre = preOf(0);
#pragma unroll
      for (int u = 0; u < U; ++u) acc[u] = kd::vecOp<D, O, false, 16>(acc[u], acc[u], pre);
    }
    if (nsrc == 1) {
#pragma unroll
      for (int u = 0; u < U; ++u) acc[u] = kd::vecOp<D, O, false, 16>(acc[u], acc[u], lone);
    }
#pragma unroll 1
    for (int k = 1; k < nsrc; ++k) {
      uint4 x[U];
#pragma unroll
      for (int u = 0; u < U; ++u) x[u] = vsrc(k)[i + u * stride];
      if (hasPre(k)) {
        const kd::Ctx<C> pre = preOf(k);
#pragma unroll
        for (int u = 0; u < U; ++u) x[u] = kd::vecOp<D, O, false, 16>(x[u], x[u], pre);
      }
      const kd::Ctx<C> step = stepContext<C>(k, nsrc, L.divisor);
#pragma unroll
      for (int u = 0; u < U; ++u) acc[u] = kd::vecOp<D, O, false, 16>(acc[u], x[u], step);
    }
#pragma unroll 1
    for (int k = 0; k < ndst; ++k) {
#pragma unroll
      for (int u = 0; u < U; ++u) vdst(k)[i + u * stride] = acc[u];
    }
  };
  const uint64_t nvec = L.nvec;
  uint64_t i = tid;
  for (; i + (kUnroll - 1) * stride < nvec; i += kUnroll * stride) vectors(i, std::integral_constant<int, kUnroll>{});
  for (; i < nvec; i += stride) vectors(i, std::integral_constant<int, 1>{});
}

// dst[k][0, bytes) = src[0, bytes) for every output k: one read, ndst
// writes.  Every pointer has the same offset modulo 16 (the launcher sees
// to it): head and tail bytes one at a time, the rest in 16-byte vectors.
__global__ void __launch_bounds__(kThreads) localCopyKernel(LocalReduceLaunch L) {
  COLL_SHARED(LocalShared<unsigned char>, sh);
  if (threadIdx.x == 0) {
#pragma unroll
    for (int k = 0; k < kLocalFan; ++k) sh.dst[k] = L.dst[k];
  }
  __syncthreads();
  const int ndst = L.ndst;
  const auto* src = static_cast<const unsigned char*>(L.src[0]);
  const uint64_t tid = uint64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  const uint64_t stride = uint64_t(gridDim.x) * blockDim.x;
  auto byte = [&](uint64_t i) {
    const unsigned char b = src[i];
#pragma unroll 1
    for (int k = 0; k < ndst; ++k) static_cast<unsigned char*>(sh.dst[k])[i] = b;
  };
  for (uint64_t i = tid; i < L.head; i += stride) byte(i);
  for (uint64_t i = L.head + L.nvec * 16 + tid; i < L.count; i += stride) byte(i);
  const auto* vs = reinterpret_cast<const uint4*>(src + L.head);
  auto vd = [&](int k) { return reinterpret_cast<uint4*>(static_cast<unsigned char*>(sh.dst[k]) + L.head); };
  const uint64_t nvec = L.nvec;
  uint64_t i = tid;
  for (; i + (kUnroll - 1) * stride < nvec; i += kUnroll * stride) {
    uint4 v[kUnroll];
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) v[u] = vs[i + u * stride];
#pragma unroll 1
    for (int k = 0; k < ndst; ++k) {
#pragma unroll
      for (int u = 0; u < kUnroll; ++u) vd(k)[i + u * stride] = v[u];
    }
  }
  for (; i < nvec; i += stride) {
    const uint4 v = vs[i];
#pragma unroll 1
    for (int k = 0; k < ndst; ++k) vd(k)[i] = v;
  }
}

template <DType D, Op O>
struct PlainKernel {
  static auto kernel() { return &localReduceKernel<D, O, false>; }
};
// A pre-multiplied reduction is always a sum: every op maps to the sum's
// kernel (oneLaunchKernel's table has a slot per op).
template <DType D, Op O>
struct PreKernel {
  static auto kernel() { return &localReduceKernel<D, Op::Sum, true>; }
};

bool partialOverlap(uintptr_t x, uintptr_t y, uint64_t bytes) { return x != y && x < y + bytes && y < x + bytes; }

// Blocks for nvec vectors (kUnroll per thread per pass) and `leftovers`
// elements (one per thread), at most maxBlocks: the loops stride over the
// rest.
unsigned blocksFor(uint64_t nvec, uint64_t leftovers, unsigned maxBlocks) {
  const uint64_t work = std::max<uint64_t>({(nvec + kUnroll - 1) / kUnroll, leftovers, 1});
  return static_cast<unsigned>(std::min<uint64_t>((work + kThreads - 1) / kThreads, std::max(1u, maxBlocks)));
}

}  // namespace

uint64_t hostScalarBits(DType dtype, const kernels::Scalar& s) { return kd::computeScalarBits(dtype, s); }

cudaError_t loadLocalReduceKernels() {
  const cudaError_t plain = loadOneLaunchKernels<PlainKernel>();
  const cudaError_t pre = loadOneLaunchKernels<PreKernel>();
  const cudaError_t copy = cuda::load(&localCopyKernel);
  return plain != cudaSuccess ? plain : pre != cudaSuccess ? pre : copy;
}

cudaError_t launchLocalCopy(const void* src, void* const* dst, int ndst, uint64_t bytes, unsigned maxBlocks,
                            cudaStream_t s) {
  if (src == nullptr || ndst < 1 || ndst > kLocalFan) return cudaErrorInvalidValue;
  if (bytes == 0) return cudaSuccess;
  const auto from = reinterpret_cast<uintptr_t>(src);
  bool vectors = true;
  for (int k = 0; k < ndst; ++k) {
    const auto to = reinterpret_cast<uintptr_t>(dst[k]);
    if (to == 0 || partialOverlap(to, from, bytes) || to == from) return cudaErrorInvalidValue;
    vectors = vectors && (to - from) % 16 == 0;
  }
  if (!vectors) {  // mutually misaligned: the runtime's copies, which take any offsets
    for (int k = 0; k < ndst; ++k) {
      const cudaError_t e = cudaMemcpyAsync(dst[k], src, bytes, cudaMemcpyDefault, s);
      if (e != cudaSuccess) return e;
    }
    return cudaSuccess;
  }
  LocalReduceLaunch l;
  l.dtype = DType::Uint8;
  l.nsrc = 1;
  l.ndst = ndst;
  l.src[0] = src;
  for (int k = 0; k < ndst; ++k) l.dst[k] = dst[k];
  l.count = bytes;
  l.head = std::min<uint64_t>(bytes, (16 - from % 16) % 16);
  l.nvec = (bytes - l.head) / 16;
  return cuda::launch(&localCopyKernel, dim3(blocksFor(l.nvec, l.count - l.nvec * 16, maxBlocks)), dim3(kThreads), 0,
                      s, l);
}

cudaError_t launchLocalReduce(LocalReduceLaunch l, unsigned maxBlocks, cudaStream_t s) {
  if (l.nsrc < 1 || l.nsrc > kLocalFan || l.ndst < 1 || l.ndst > kLocalFan ||
      static_cast<unsigned>(l.dtype) >= static_cast<unsigned>(kernels::kNumDTypes) ||
      static_cast<unsigned>(l.op) >= static_cast<unsigned>(kernels::kNumOps) || (l.preMask >> l.nsrc) != 0 ||
      (l.preMask != 0 && l.op != Op::Sum))  // pre-multiplication belongs to the pre-multiplied sum
    return cudaErrorInvalidValue;
  if (l.count == 0) return cudaSuccess;
  const uint64_t es = kernels::dtypeSize(l.dtype);
  if (l.count > (UINT64_MAX / 2) / es) return cudaErrorInvalidValue;
  const uint64_t bytes = l.count * es;
  // The vector body needs one offset modulo 16 for every pointer.
  uintptr_t any = 0, diff = 0;
  const uintptr_t base = reinterpret_cast<uintptr_t>(l.dst[0]);
  for (int k = 0; k < l.nsrc; ++k) {
    const auto p = reinterpret_cast<uintptr_t>(l.src[k]);
    if (p == 0) return cudaErrorInvalidValue;
    any |= p;
    diff |= p ^ base;
  }
  for (int k = 0; k < l.ndst; ++k) {
    const auto d = reinterpret_cast<uintptr_t>(l.dst[k]);
    if (d == 0) return cudaErrorInvalidValue;
    for (int j = 0; j < l.nsrc; ++j)
      if (partialOverlap(d, reinterpret_cast<uintptr_t>(l.src[j]), bytes)) return cudaErrorInvalidValue;
    any |= d;
    diff |= d ^ base;
  }
  if (any % es != 0) return cudaErrorMisalignedAddress;
  const uint64_t perVec = 16 / es;
  if (diff % 16 == 0) {
    l.head = std::min<uint64_t>(l.count, ((16 - base % 16) % 16) / es);
    l.nvec = (l.count - l.head) / perVec;
  } else {
    l.head = l.count;  // mutually misaligned: one element at a time
    l.nvec = 0;
  }
  const auto fn = l.preMask != 0 ? oneLaunchKernel<PreKernel>(l.dtype, l.op) : oneLaunchKernel<PlainKernel>(l.dtype, l.op);
  if (fn == nullptr) return cudaErrorInvalidValue;
  return cuda::launch(fn, dim3(blocksFor(l.nvec, l.count - l.nvec * perVec, maxBlocks)), dim3(kThreads), 0, s, l);
}

unsigned localReduceMaxBlocks(int smCount) { return static_cast<unsigned>(std::max(1, smCount)) * kBlocksPerSm; }

}  // namespace coll::device
