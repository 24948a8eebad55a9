// reduce_scalar.cc — the portable reference implementation, built from the
// element functors in reduce_functors.h.  Every other ISA must match it bit
// for bit.
#include <cstring>

#include "coll/kernels/reduce_functors.h"
#include "internal.h"

namespace coll::kernels::detail {
namespace {

// Element traits: storage type S, compute type C, widen/narrow.
template <DType D> struct Elem;

template <class T> struct IntElem {
  using S = T;
  using C = T;
  static C load(S v) { return v; }
  static S store(C v) { return v; }
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
  static C load(S v) { return v; }
  static S store(C v) { return fn::canonicalize(v); }
};
template <> struct Elem<DType::Float64> {
  using S = double;
  using C = double;
  static C load(S v) { return v; }
  static S store(C v) { return fn::canonicalize(v); }
};

template <class Fmt, class Storage> struct SmallFloatElem {
  using S = Storage;
  using C = float;
  static C load(S v) { return fn::widen<Fmt>(v); }
  static S store(C v) { return S(fn::narrowCanonical<Fmt>(v)); }
};
template <> struct Elem<DType::Float16> : SmallFloatElem<fn::Fp16Format, uint16_t> {};
template <> struct Elem<DType::Bfloat16> : SmallFloatElem<fn::Bf16Format, uint16_t> {};
template <> struct Elem<DType::Fp8E4M3> : SmallFloatElem<fn::E4M3Format, uint8_t> {};
template <> struct Elem<DType::Fp8E5M2> : SmallFloatElem<fn::E5M2Format, uint8_t> {};

template <class E, template <class> class OpT, bool HasA, bool Pre, bool Post>
void loop(void* dst, const void* a, const void* b, size_t n, typename E::C s, uint64_t d) {
  using S = typename E::S;
  using C = typename E::C;
  S* out = static_cast<S*>(dst);
  const S* in_a = static_cast<const S*>(a);
  const S* in_b = static_cast<const S*>(b);
  for (size_t i = 0; i < n; ++i) {
    C x = E::load(in_b[i]);
    if constexpr (Pre) x = fn::preMul(x, s);
    C r;
    if constexpr (HasA) r = OpT<C>{}(E::load(in_a[i]), x);
    else r = x;
    if constexpr (Post) r = fn::postDiv(r, d);
    out[i] = E::store(r);
  }
}

template <class E, template <class> class OpT, bool HasA>
void byFlags(void* dst, const void* a, const void* b, size_t n, bool pre, bool post,
             typename E::C s, uint64_t d) {
  if (pre) {
    if (post) loop<E, OpT, HasA, true, true>(dst, a, b, n, s, d);
    else loop<E, OpT, HasA, true, false>(dst, a, b, n, s, d);
  } else {
    if (post) loop<E, OpT, HasA, false, true>(dst, a, b, n, s, d);
    else loop<E, OpT, HasA, false, false>(dst, a, b, n, s, d);
  }
}

template <DType D>
void run(const ReduceFn& f, void* dst, const void* a, const void* b, size_t n, bool pre,
         bool post) {
  using E = Elem<D>;
  using C = typename E::C;
  C s{};
  if (pre) {
    if constexpr (std::is_floating_point_v<C>) s = C(f.scalar.f);
    else if constexpr (std::is_signed_v<C>) s = C(f.scalar.i);
    else s = C(f.scalar.u);
  }
  const uint64_t d = f.divisor;
  if (a == nullptr) {
    if constexpr (std::is_integral_v<C>) {
      if (!pre && !post) {
        if (dst != b) memmove(dst, b, n * sizeof(typename E::S));
        return;
      }
    }
    byFlags<E, fn::SumOp, false>(dst, a, b, n, pre, post, s, d);
    return;
  }
  switch (f.op) {
    case Op::Sum: byFlags<E, fn::SumOp, true>(dst, a, b, n, pre, post, s, d); break;
    case Op::Prod: byFlags<E, fn::ProdOp, true>(dst, a, b, n, pre, post, s, d); break;
    case Op::Max: byFlags<E, fn::MaxOp, true>(dst, a, b, n, pre, post, s, d); break;
    case Op::Min: byFlags<E, fn::MinOp, true>(dst, a, b, n, pre, post, s, d); break;
  }
}

void fromFloatScalar(DType t, const float* src, void* dst, size_t n) {
  for (size_t i = 0; i < n; ++i) {
    switch (t) {
      case DType::Float32: static_cast<float*>(dst)[i] = Elem<DType::Float32>::store(src[i]); break;
      case DType::Float16: static_cast<uint16_t*>(dst)[i] = Elem<DType::Float16>::store(src[i]); break;
      case DType::Bfloat16: static_cast<uint16_t*>(dst)[i] = Elem<DType::Bfloat16>::store(src[i]); break;
      case DType::Fp8E4M3: static_cast<uint8_t*>(dst)[i] = Elem<DType::Fp8E4M3>::store(src[i]); break;
      case DType::Fp8E5M2: static_cast<uint8_t*>(dst)[i] = Elem<DType::Fp8E5M2>::store(src[i]); break;
      default: return;
    }
  }
}

void toFloatScalar(DType t, const void* src, float* dst, size_t n) {
  for (size_t i = 0; i < n; ++i) {
    switch (t) {
      case DType::Float32: dst[i] = static_cast<const float*>(src)[i]; break;
      case DType::Float16: dst[i] = Elem<DType::Float16>::load(static_cast<const uint16_t*>(src)[i]); break;
      case DType::Bfloat16: dst[i] = Elem<DType::Bfloat16>::load(static_cast<const uint16_t*>(src)[i]); break;
      case DType::Fp8E4M3: dst[i] = Elem<DType::Fp8E4M3>::load(static_cast<const uint8_t*>(src)[i]); break;
      case DType::Fp8E5M2: dst[i] = Elem<DType::Fp8E5M2>::load(static_cast<const uint8_t*>(src)[i]); break;
      default: return;
    }
  }
}

}  // namespace

void reduceScalar(const ReduceFn& f, void* dst, const void* a, const void* b, size_t n,
                  bool applyPre, bool applyPost) {
  if (n == 0) return;
  const bool pre = applyPre && f.premul;
  const bool post = applyPost && f.divisor != 0;
  switch (f.dtype) {
    case DType::Int8: run<DType::Int8>(f, dst, a, b, n, pre, post); break;
    case DType::Uint8: run<DType::Uint8>(f, dst, a, b, n, pre, post); break;
    case DType::Int32: run<DType::Int32>(f, dst, a, b, n, pre, post); break;
    case DType::Uint32: run<DType::Uint32>(f, dst, a, b, n, pre, post); break;
    case DType::Int64: run<DType::Int64>(f, dst, a, b, n, pre, post); break;
    case DType::Uint64: run<DType::Uint64>(f, dst, a, b, n, pre, post); break;
    case DType::Float16: run<DType::Float16>(f, dst, a, b, n, pre, post); break;
    case DType::Float32: run<DType::Float32>(f, dst, a, b, n, pre, post); break;
    case DType::Float64: run<DType::Float64>(f, dst, a, b, n, pre, post); break;
    case DType::Bfloat16: run<DType::Bfloat16>(f, dst, a, b, n, pre, post); break;
    case DType::Fp8E4M3: run<DType::Fp8E4M3>(f, dst, a, b, n, pre, post); break;
    case DType::Fp8E5M2: run<DType::Fp8E5M2>(f, dst, a, b, n, pre, post); break;
  }
}

const IsaImpl kScalarImpl = {"scalar", &reduceScalar, &fromFloatScalar, &toFloatScalar};

}  // namespace coll::kernels::detail
