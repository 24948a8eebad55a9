// device_elem.cuh — element traits of the CUDA kernels (nvcc only).
//
// Storage type S, compute type C, load (widen) and store (narrow, canonical
// NaN), bit-identical to the host reference's Elem<> in reduce_scalar.cc:
//   * ints, float32 and float64 are the same code as the host's;
//   * fp8 e4m3/e5m2 use the shared integer conversions of
//     coll/kernels/reduce_functors.h (the host's own code);
//   * fp16 and bf16 use the hardware conversions (cvt.f32.f16, a shift for
//     bf16; cvt.rn.f16.f32 / cvt.rn.bf16.f32), which are exact / round to
//     nearest even with IEEE overflow and subnormals, like the host's integer
//     code; NaN is handled before them (canonical NaN), and a NaN's payload
//     never reaches a stored result.  tests/gpu compares them with the shared
//     conversions over every float bit pattern.  Define
//     COLL_CUDA_SOFT_CONVERT=1 to use the shared conversions for these too.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>

#include "coll/kernels/reduce.h"
#include "coll/kernels/reduce_functors.h"

#ifndef COLL_CUDA_SOFT_CONVERT
#define COLL_CUDA_SOFT_CONVERT 0
#endif

namespace coll::kernels::device {

template <DType D> struct Elem;

template <class T> struct IntElem {
  using S = T;
  using C = T;
  static __device__ __forceinline__ C load(S v) { return v; }
  static __device__ __forceinline__ S store(C v) { return v; }
};
template <> struct Elem<DType::Int8> : IntElem<int8_t> {};
template <> struct Elem<DType::Uint8> : IntElem<uint8_t> {};
template <> struct Elem<DType::Int32> : IntElem<int32_t> {};
template <> struct Elem<DType::Uint32> : IntElem<uint32_t> {};
template <> struct Elem<DType::Int64> : IntElem<int64_t> {};
template <> struct Elem<DType::Uint64> : IntElem<uint64_t> {};

template <> struct Elem<DType::Float32> {
  using S = float;
  using C = float;
  static __device__ __forceinline__ C load(S v) { return v; }
  static __device__ __forceinline__ S store(C v) { return fn::canonicalize(v); }
};
template <> struct Elem<DType::Float64> {
  using S = double;
  using C = double;
  static __device__ __forceinline__ C load(S v) { return v; }
  static __device__ __forceinline__ S store(C v) { return fn::canonicalize(v); }
};

// The shared (host reference) conversions, used for fp8 always.
template <class Fmt, class Storage> struct SoftSmallFloatElem {
  using S = Storage;
  using C = float;
  static __device__ __forceinline__ C load(S v) { return fn::widen<Fmt>(v); }
  static __device__ __forceinline__ S store(C v) { return S(fn::narrowCanonical<Fmt>(v)); }
};

struct HwHalfElem {
  using S = uint16_t;
  using C = float;
  static __device__ __forceinline__ C load(S v) { return __half2float(__ushort_as_half(v)); }
  static __device__ __forceinline__ S store(C v) {
    if (fn::isNaN(v)) return uint16_t(fn::Fp16Format::kCanonicalNaN);
    return __half_as_ushort(__float2half_rn(v));
  }
};

struct HwBf16Elem {
  using S = uint16_t;
  using C = float;
  static __device__ __forceinline__ C load(S v) { return __uint_as_float(uint32_t(v) << 16); }
  static __device__ __forceinline__ S store(C v) {
    if (fn::isNaN(v)) return uint16_t(fn::Bf16Format::kCanonicalNaN);
    return __bfloat16_as_ushort(__float2bfloat16_rn(v));
  }
};

#if COLL_CUDA_SOFT_CONVERT
template <> struct Elem<DType::Float16> : SoftSmallFloatElem<fn::Fp16Format, uint16_t> {};
template <> struct Elem<DType::Bfloat16> : SoftSmallFloatElem<fn::Bf16Format, uint16_t> {};
#else
template <> struct Elem<DType::Float16> : HwHalfElem {};
template <> struct Elem<DType::Bfloat16> : HwBf16Elem {};
#endif
template <> struct Elem<DType::Fp8E4M3> : SoftSmallFloatElem<fn::E4M3Format, uint8_t> {};
template <> struct Elem<DType::Fp8E5M2> : SoftSmallFloatElem<fn::E5M2Format, uint8_t> {};

// Op -> functor (reduce_functors.h: the host's own element ops).
template <Op O, class C> struct OpOf;
template <class C> struct OpOf<Op::Sum, C> : fn::SumOp<C> {};
template <class C> struct OpOf<Op::Prod, C> : fn::ProdOp<C> {};
template <class C> struct OpOf<Op::Max, C> : fn::MaxOp<C> {};
template <class C> struct OpOf<Op::Min, C> : fn::MinOp<C> {};

}  // namespace coll::kernels::device
