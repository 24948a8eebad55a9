// reduce_impl.cuh — the reduction kernel template and its launcher (nvcc
// only; included by the per-dtype files reduce_<dtype>.cu).
//
// One launch covers [head elements][nvec aligned vectors][tail elements]
// (see LaunchArgs).  Threads walk the vectors with a grid-stride loop, four
// vectors per thread per step (all loads issued before the math, so each
// thread keeps 4-8 16-byte loads in flight), then the remainder one at a
// time; the first `head` and `tail` global threads also do one leftover
// element each.  Per element the math is the host reference's: load (widen),
// pre-multiply, op, post-divide, store (narrow, canonical NaN) — the same
// functors, compiled with -fmad=false so nothing is contracted into an FMA.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>
#include <cstring>

#include "device_elem.cuh"
#include "coll/kernel_launch.h"
#include "launch.h"

namespace coll::kernels::device {

template <int VB> struct RawVec;
template <> struct RawVec<16> { using T = uint4; };
template <> struct RawVec<8> { using T = uint2; };
template <> struct RawVec<4> { using T = uint32_t; };
template <> struct RawVec<2> { using T = uint16_t; };
template <> struct RawVec<1> { using T = uint8_t; };

template <class C> struct Ctx {
  C s;          // pre-multiply scalar (compute type)
  uint64_t d;   // post divisor
  bool hasA, pre, post;
};

// One element.  Simple: a present, no pre, no post (known at compile time).
template <DType D, Op O, bool Simple>
__device__ __forceinline__ typename Elem<D>::S one(typename Elem<D>::S av, typename Elem<D>::S bv,
                                                   const Ctx<typename Elem<D>::C>& c) {
  using E = Elem<D>;
  using C = typename E::C;
  C x = E::load(bv);
  if constexpr (Simple) {
    return E::store(OpOf<O, C>{}(E::load(av), x));
  } else {
    if (c.pre) x = fn::preMul(x, c.s);
    C r = c.hasA ? OpOf<O, C>{}(E::load(av), x) : x;
    if (c.post) r = fn::postDiv(r, c.d);
    return E::store(r);
  }
}

// One vector of VB bytes (lanes in registers; memcpy is a register move).
template <DType D, Op O, bool Simple, int VB>
__device__ __forceinline__ typename RawVec<VB>::T vecOp(typename RawVec<VB>::T ra, typename RawVec<VB>::T rb,
                                                        const Ctx<typename Elem<D>::C>& c) {
  using S = typename Elem<D>::S;
  constexpr int N = VB / int(sizeof(S));
  S av[N], bv[N], out[N];
  memcpy(av, &ra, VB);
  memcpy(bv, &rb, VB);
#pragma unroll
  for (int k = 0; k < N; ++k) out[k] = one<D, O, Simple>(av[k], bv[k], c);
  typename RawVec<VB>::T r;
  memcpy(&r, out, VB);
  return r;
}

template <DType D, Op O, int VB, bool Simple>
__global__ void __launch_bounds__(256) reduceKernel(LaunchArgs p) {
  using E = Elem<D>;
  using S = typename E::S;
  using C = typename E::C;
  using V = typename RawVec<VB>::T;
  constexpr int N = VB / int(sizeof(S));
  constexpr int U = 4;

  Ctx<C> c;
  c.hasA = Simple || (p.flags & kHasA) != 0;
  c.pre = !Simple && (p.flags & kPre) != 0;
  c.post = !Simple && (p.flags & kPost) != 0;
  c.d = p.divisor;
  c.s = C{};
  if (c.pre) {
    if (p.scalarPtr != nullptr) {
      c.s = E::load(*static_cast<const S*>(p.scalarPtr));
    } else {
      memcpy(&c.s, &p.scalarBits, sizeof(C));
    }
  }

  S* dst = static_cast<S*>(p.dst);
  const S* a = static_cast<const S*>(p.a);
  const S* b = static_cast<const S*>(p.b);
  const size_t tid = size_t(blockIdx.x) * blockDim.x + threadIdx.x;
  const size_t stride = size_t(gridDim.x) * blockDim.x;

  // Leftover elements: head (before the first aligned vector) and tail,
  // fewer than a vector each, so one pass of the loops on a real launch;
  // written as loops so that no launch shape can leave one out.
  const S zero{};
  for (size_t j = tid; j < p.head; j += stride) dst[j] = one<D, O, Simple>(c.hasA ? a[j] : zero, b[j], c);
  for (size_t j = tid; j < p.tail; j += stride) {
    const size_t i = p.head + p.nvec * N + j;
    dst[i] = one<D, O, Simple>(c.hasA ? a[i] : zero, b[i], c);
  }

  V* vd = reinterpret_cast<V*>(dst + p.head);
  const V* va = reinterpret_cast<const V*>((c.hasA ? a : b) + p.head);  // (unused without a)
  const V* vb = reinterpret_cast<const V*>(b + p.head);
  const size_t nvec = p.nvec;
  size_t i = tid;
  if (c.hasA) {
    for (; i + (U - 1) * stride < nvec; i += U * stride) {
      V ra[U], rb[U];
#pragma unroll
      for (int u = 0; u < U; ++u) {
        ra[u] = va[i + u * stride];
        rb[u] = vb[i + u * stride];
      }
#pragma unroll
      for (int u = 0; u < U; ++u) vd[i + u * stride] = vecOp<D, O, Simple, VB>(ra[u], rb[u], c);
    }
    for (; i < nvec; i += stride) {
      const V ra = va[i], rb = vb[i];  // whole-vector loads (not memcpy'd from global)
      vd[i] = vecOp<D, O, Simple, VB>(ra, rb, c);
    }
  } else {
    for (; i + (U - 1) * stride < nvec; i += U * stride) {
      V rb[U];
#pragma unroll
      for (int u = 0; u < U; ++u) rb[u] = vb[i + u * stride];
#pragma unroll
      for (int u = 0; u < U; ++u) vd[i + u * stride] = vecOp<D, O, Simple, VB>(rb[u], rb[u], c);
    }
    for (; i < nvec; i += stride) {
      const V rb = vb[i];
      vd[i] = vecOp<D, O, Simple, VB>(rb, rb, c);
    }
  }
}

template <DType D, Op O, bool Simple>
cudaError_t launchWidth(const LaunchArgs& p) {
  using S = typename Elem<D>::S;
  void (*k)(LaunchArgs) = nullptr;
  switch (p.vecBytes) {
#define COLL_WIDTH_CASE(W)                                                          \
  case W:                                                                           \
    if constexpr (vecWidthSupported(sizeof(S), W, Simple))                          \
      k = &reduceKernel<D, O, W, Simple>;                                           \
    break;
    COLL_WIDTH_CASE(16)
    COLL_WIDTH_CASE(8)
    COLL_WIDTH_CASE(4)
    COLL_WIDTH_CASE(2)
    COLL_WIDTH_CASE(1)
#undef COLL_WIDTH_CASE
    default: break;
  }
  if (k == nullptr) return cudaErrorInvalidValue;
  return cuda::launch(k, dim3(p.grid), dim3(p.block), 0, p.stream, p);
}

template <DType D, Op O>
cudaError_t launchOp(const LaunchArgs& p) {
  const bool simple = p.flags == kHasA;
  return simple ? launchWidth<D, O, true>(p) : launchWidth<D, O, false>(p);
}

// Every kernel of dtype D (each op, width and form) loaded now (cuda::load).
template <DType D>
cudaError_t loadReduce() {
  using S = typename Elem<D>::S;
  cudaError_t first = cudaSuccess;
  auto one = [&](auto kernel) {
    const cudaError_t e = cuda::load(kernel);
    if (first == cudaSuccess) first = e;
  };
  auto forOp = [&]<Op O>() {
    auto forForm = [&]<bool Simple>() {
      if constexpr (vecWidthSupported(sizeof(S), 16, Simple)) one(&reduceKernel<D, O, 16, Simple>);
      if constexpr (vecWidthSupported(sizeof(S), 8, Simple)) one(&reduceKernel<D, O, 8, Simple>);
      if constexpr (vecWidthSupported(sizeof(S), 4, Simple)) one(&reduceKernel<D, O, 4, Simple>);
      if constexpr (vecWidthSupported(sizeof(S), 2, Simple)) one(&reduceKernel<D, O, 2, Simple>);
      if constexpr (vecWidthSupported(sizeof(S), 1, Simple)) one(&reduceKernel<D, O, 1, Simple>);
    };
    forForm.template operator()<true>();
    forForm.template operator()<false>();
  };
  forOp.template operator()<Op::Sum>();
  forOp.template operator()<Op::Prod>();
  forOp.template operator()<Op::Max>();
  forOp.template operator()<Op::Min>();
  return first;
}

template <DType D>
cudaError_t launchReduce(const LaunchArgs& p) {
  switch (p.op) {
    case Op::Sum: return launchOp<D, Op::Sum>(p);
    case Op::Prod: return launchOp<D, Op::Prod>(p);
    case Op::Max: return launchOp<D, Op::Max>(p);
    case Op::Min: return launchOp<D, Op::Min>(p);
  }
  return cudaErrorInvalidValue;
}

}  // namespace coll::kernels::device

#define COLL_DEVICE_INSTANTIATE(D) \
  template cudaError_t coll::kernels::device::launchReduce<coll::kernels::DType::D>( \
      const coll::kernels::device::LaunchArgs&); \
  template cudaError_t coll::kernels::device::loadReduce<coll::kernels::DType::D>();
