// reduce_avx512.cc — AVX-512 (F, BW, VL, DQ) kernels.  Compiled with
// -mavx512f -mavx512bw -mavx512vl -mavx512dq -mf16c; only called after the
// dispatcher checked the CPU.  Everything lives in an anonymous namespace
// (see internal.h for why).
//
// Instructions: float32/float64 arithmetic in zmm (vaddps/vmulps/vdivps,
// vmaxps/vminps with a ±0/NaN fix-up), fp16 <-> float with vcvtph2ps /
// vcvtps2ph (RNE immediate; checked bit-exact against the integer reference
// for all 2^32 float inputs, also under FTZ/DAZ), bf16 rounding with integer
// ops (vcvtneps2bf16 is not used: it treats denormal inputs as zero), fp8
// rounding with integer ops plus vcvtps2dq{rn-sae} for subnormal results,
// fp8 widening through vcvtph2ps, vpmovdw / vpmovdb to pack, masked
// loads/stores for heads and tails, non-temporal stores for large outputs.

// GCC 12's AVX-512 headers trip -Wuninitialized on their own
// _mm512_undefined_*() helpers (GCC bug 105593); silence it for the header.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <immintrin.h>
#pragma GCC diagnostic pop

#include <type_traits>

#include "internal.h"

namespace coll::kernels::detail {
namespace {

// Outputs at least this large are written with non-temporal stores.
constexpr size_t kStreamBytes = size_t(1) << 23;

// --------------------------------------------------------------- float32 --
struct Arith32 {
  using V = __m512;
  using M = __mmask16;
  using Scalar = float;
  static constexpr int L = 16;
  static V set1(float x) { return _mm512_set1_ps(x); }
  static V add(V a, V b) { return _mm512_add_ps(a, b); }
  static V mul(V a, V b) { return _mm512_mul_ps(a, b); }
  static V div(V a, V b) { return _mm512_div_ps(a, b); }
  static V qnan() { return _mm512_castsi512_ps(_mm512_set1_epi32(0x7fc00000)); }
  // IEEE maximum/minimum: NaN if either is NaN; -0 < +0.
  static V max(V a, V b) {
    V r = _mm512_max_ps(a, b);
    r = _mm512_mask_and_ps(r, _mm512_cmp_ps_mask(a, b, _CMP_EQ_OQ), a, b);
    return _mm512_mask_mov_ps(r, _mm512_cmp_ps_mask(a, b, _CMP_UNORD_Q), qnan());
  }
  static V min(V a, V b) {
    V r = _mm512_min_ps(a, b);
    r = _mm512_mask_or_ps(r, _mm512_cmp_ps_mask(a, b, _CMP_EQ_OQ), a, b);
    return _mm512_mask_mov_ps(r, _mm512_cmp_ps_mask(a, b, _CMP_UNORD_Q), qnan());
  }
  static M nanMask(V v) { return _mm512_cmp_ps_mask(v, v, _CMP_UNORD_Q); }
  static V canon(V v) { return _mm512_mask_mov_ps(v, nanMask(v), qnan()); }
};

struct Arith64 {
  using V = __m512d;
  using M = __mmask8;
  using Scalar = double;
  static constexpr int L = 8;
  static V set1(double x) { return _mm512_set1_pd(x); }
  static V add(V a, V b) { return _mm512_add_pd(a, b); }
  static V mul(V a, V b) { return _mm512_mul_pd(a, b); }
  static V div(V a, V b) { return _mm512_div_pd(a, b); }
  static V qnan() { return _mm512_castsi512_pd(_mm512_set1_epi64(0x7ff8000000000000ll)); }
  static V max(V a, V b) {
    V r = _mm512_max_pd(a, b);
    r = _mm512_mask_and_pd(r, _mm512_cmp_pd_mask(a, b, _CMP_EQ_OQ), a, b);
    return _mm512_mask_mov_pd(r, _mm512_cmp_pd_mask(a, b, _CMP_UNORD_Q), qnan());
  }
  static V min(V a, V b) {
    V r = _mm512_min_pd(a, b);
    r = _mm512_mask_or_pd(r, _mm512_cmp_pd_mask(a, b, _CMP_EQ_OQ), a, b);
    return _mm512_mask_mov_pd(r, _mm512_cmp_pd_mask(a, b, _CMP_UNORD_Q), qnan());
  }
  static V canon(V v) {
    return _mm512_mask_mov_pd(v, _mm512_cmp_pd_mask(v, v, _CMP_UNORD_Q), qnan());
  }
};

// ---------------------------------------------------------------- codecs --
// A codec loads L elements of storage type S widened to the compute vector,
// and stores a compute vector narrowed (RNE) with NaN made canonical.

struct F32 : Arith32 {
  using S = float;
  static V load(const S* p) { return _mm512_loadu_ps(p); }
  static V loadMask(const S* p, M k) { return _mm512_maskz_loadu_ps(k, p); }
  static void store(S* p, V v) { _mm512_storeu_ps(p, canon(v)); }
  static void stream(S* p, V v) { _mm512_stream_ps(p, canon(v)); }
  static void storeMask(S* p, M k, V v) { _mm512_mask_storeu_ps(p, k, canon(v)); }
};

struct F64 : Arith64 {
  using S = double;
  static V load(const S* p) { return _mm512_loadu_pd(p); }
  static V loadMask(const S* p, M k) { return _mm512_maskz_loadu_pd(k, p); }
  static void store(S* p, V v) { _mm512_storeu_pd(p, canon(v)); }
  static void stream(S* p, V v) { _mm512_stream_pd(p, canon(v)); }
  static void storeMask(S* p, M k, V v) { _mm512_mask_storeu_pd(p, k, canon(v)); }
};

struct F16 : Arith32 {
  using S = uint16_t;
  static __m256i narrow(V v) {
    const __m256i h = _mm512_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    return _mm256_mask_mov_epi16(h, nanMask(v), _mm256_set1_epi16(0x7e00));
  }
  static V load(const S* p) { return _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p))); }
  static V loadMask(const S* p, M k) { return _mm512_cvtph_ps(_mm256_maskz_loadu_epi16(k, p)); }
  static void store(S* p, V v) { _mm256_storeu_si256(reinterpret_cast<__m256i*>(p), narrow(v)); }
  static void stream(S* p, V v) { _mm256_stream_si256(reinterpret_cast<__m256i*>(p), narrow(v)); }
  static void storeMask(S* p, M k, V v) { _mm256_mask_storeu_epi16(p, k, narrow(v)); }
};

struct BF16 : Arith32 {
  using S = uint16_t;
  static V widen(__m256i raw) { return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(raw), 16)); }
  static __m256i narrow(V v) {
    const __m512i bits = _mm512_castps_si512(v);
    const __m512i odd = _mm512_and_si512(_mm512_srli_epi32(bits, 16), _mm512_set1_epi32(1));
    __m512i r = _mm512_add_epi32(_mm512_add_epi32(bits, _mm512_set1_epi32(0x7fff)), odd);
    r = _mm512_srli_epi32(r, 16);
    r = _mm512_mask_mov_epi32(r, nanMask(v), _mm512_set1_epi32(0x7fc0));
    return _mm512_cvtepi32_epi16(r);
  }
  static V load(const S* p) { return widen(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p))); }
  static V loadMask(const S* p, M k) { return widen(_mm256_maskz_loadu_epi16(k, p)); }
  static void store(S* p, V v) { _mm256_storeu_si256(reinterpret_cast<__m256i*>(p), narrow(v)); }
  static void stream(S* p, V v) { _mm256_stream_si256(reinterpret_cast<__m256i*>(p), narrow(v)); }
  static void storeMask(S* p, M k, V v) { _mm256_mask_storeu_epi16(p, k, narrow(v)); }
};

// RNE narrowing of 16 floats to an fp8 format (the vector form of
// fn::narrowCanonical), one result per 32-bit lane.  Normal results round
// with integer ops on the bits; results below the format's smallest normal
// are abs * 2^(bias+mant-1) (an exact scaling) converted to an integer with
// embedded round-to-nearest-even, which is independent of MXCSR.  Inputs that
// are float subnormals round to zero either way, so DAZ does not matter.
// Overflow: kOvfCode is kMaxCode + 1 for every format, so min() saturates.
template <int kMant, int kBias, uint32_t kOvfCode, uint32_t kNaNCode, int kWidth>
__m512i narrowSmall(__m512 v) {
  constexpr int kRn = _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC;
  const __m512i bits = _mm512_castps_si512(v);
  const __m512i abs = _mm512_and_si512(bits, _mm512_set1_epi32(0x7fffffff));
  constexpr int kSh = 23 - kMant;
  constexpr uint32_t kBiasAndHalf = ((1u << (kSh - 1)) - 1u) - (uint32_t(127 - kBias) << 23);
  const __m512i odd = _mm512_and_si512(_mm512_srli_epi32(abs, kSh), _mm512_set1_epi32(1));
  const __m512i rn = _mm512_srli_epi32(
      _mm512_add_epi32(_mm512_add_epi32(abs, _mm512_set1_epi32(int(kBiasAndHalf))), odd), kSh);
  const __m512 scale = _mm512_castsi512_ps(_mm512_set1_epi32((127 + kBias + kMant - 1) << 23));
  const __m512i rs = _mm512_cvt_roundps_epi32(_mm512_mul_round_ps(_mm512_castsi512_ps(abs), scale, kRn), kRn);
  constexpr uint32_t kMinNormalBits = uint32_t(127 + 1 - kBias) << 23;
  __m512i r = _mm512_mask_mov_epi32(rn, _mm512_cmplt_epu32_mask(abs, _mm512_set1_epi32(int(kMinNormalBits))), rs);
  r = _mm512_min_epu32(r, _mm512_set1_epi32(int(kOvfCode)));
  // r | (sign moved to bit kWidth-1)
  r = _mm512_ternarylogic_epi32(r, _mm512_srli_epi32(bits, 32 - kWidth), _mm512_set1_epi32(1 << (kWidth - 1)), 0xf8);
  return _mm512_mask_mov_epi32(r, _mm512_cmp_ps_mask(v, v, _CMP_UNORD_Q), _mm512_set1_epi32(int(kNaNCode)));
}

struct E4M3 : Arith32 {
  using S = uint8_t;
  // e4m3 magnitude bits << 7 read as fp16 are the value / 256 (normal and
  // subnormal alike): widen through vcvtph2ps, scale back (exact), fix NaN.
  static V widen(__m128i raw) {
    __m256i h = _mm256_slli_epi16(_mm256_cvtepi8_epi16(raw), 7);  // sign-extended: sign lands in bit 15
    h = _mm256_and_si256(h, _mm256_set1_epi16(int16_t(0xbfff)));
    const V f = _mm512_mul_ps(_mm512_cvtph_ps(h), _mm512_set1_ps(256.0f));
    const __mmask16 nan = _mm256_cmpeq_epi16_mask(_mm256_and_si256(h, _mm256_set1_epi16(0x3f80)),
                                                  _mm256_set1_epi16(0x3f80));
    return _mm512_mask_mov_ps(f, nan, qnan());
  }
  static __m128i narrow(V v) { return _mm512_cvtepi32_epi8(narrowSmall<3, 7, 0x7f, 0x7f, 8>(v)); }
  static V load(const S* p) { return widen(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p))); }
  static V loadMask(const S* p, M k) { return widen(_mm_maskz_loadu_epi8(k, p)); }
  static void store(S* p, V v) { _mm_storeu_si128(reinterpret_cast<__m128i*>(p), narrow(v)); }
  static void stream(S* p, V v) { _mm_stream_si128(reinterpret_cast<__m128i*>(p), narrow(v)); }
  static void storeMask(S* p, M k, V v) { _mm_mask_storeu_epi8(p, k, narrow(v)); }
};

struct E5M2 : Arith32 {
  using S = uint8_t;
  // e5m2 is the top byte of an fp16: widen through vcvtph2ps (exact).
  static V widen(__m128i raw) { return _mm512_cvtph_ps(_mm256_slli_epi16(_mm256_cvtepu8_epi16(raw), 8)); }
  static __m128i narrow(V v) { return _mm512_cvtepi32_epi8(narrowSmall<2, 15, 0x7c, 0x7e, 8>(v)); }
  static V load(const S* p) { return widen(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p))); }
  static V loadMask(const S* p, M k) { return widen(_mm_maskz_loadu_epi8(k, p)); }
  static void store(S* p, V v) { _mm_storeu_si128(reinterpret_cast<__m128i*>(p), narrow(v)); }
  static void stream(S* p, V v) { _mm_stream_si128(reinterpret_cast<__m128i*>(p), narrow(v)); }
  static void storeMask(S* p, M k, V v) { _mm_mask_storeu_epi8(p, k, narrow(v)); }
};

// -------------------------------------------------------------- integers --
template <size_t kSize> struct MaskFor;
template <> struct MaskFor<1> { using M = __mmask64; };
template <> struct MaskFor<4> { using M = __mmask16; };
template <> struct MaskFor<8> { using M = __mmask8; };

template <class T>
struct IntC {
  using S = T;
  using V = __m512i;
  using M = typename MaskFor<sizeof(T)>::M;
  using Scalar = T;
  static constexpr int L = int(64 / sizeof(T));
  static constexpr bool kSigned = std::is_signed_v<T>;

  static V load(const S* p) { return _mm512_loadu_si512(p); }
  static void store(S* p, V v) { _mm512_storeu_si512(p, v); }
  static void stream(S* p, V v) { _mm512_stream_si512(reinterpret_cast<__m512i*>(p), v); }
  static V loadMask(const S* p, M k) {
    if constexpr (sizeof(T) == 1) return _mm512_maskz_loadu_epi8(k, p);
    else if constexpr (sizeof(T) == 4) return _mm512_maskz_loadu_epi32(k, p);
    else return _mm512_maskz_loadu_epi64(k, p);
  }
  static void storeMask(S* p, M k, V v) {
    if constexpr (sizeof(T) == 1) _mm512_mask_storeu_epi8(p, k, v);
    else if constexpr (sizeof(T) == 4) _mm512_mask_storeu_epi32(p, k, v);
    else _mm512_mask_storeu_epi64(p, k, v);
  }
  static V set1(T x) {
    if constexpr (sizeof(T) == 1) return _mm512_set1_epi8(char(x));
    else if constexpr (sizeof(T) == 4) return _mm512_set1_epi32(int(x));
    else return _mm512_set1_epi64(static_cast<long long>(x));
  }
  static V add(V a, V b) {
    if constexpr (sizeof(T) == 1) return _mm512_add_epi8(a, b);
    else if constexpr (sizeof(T) == 4) return _mm512_add_epi32(a, b);
    else return _mm512_add_epi64(a, b);
  }
  static V mul(V a, V b) {
    if constexpr (sizeof(T) == 1) {
      // No byte multiply: even bytes from a 16-bit product, odd bytes from
      // the product of the high bytes (low byte of that product is zero).
      const __m512i lo = _mm512_mullo_epi16(a, b);
      const __m512i hi = _mm512_mullo_epi16(_mm512_srli_epi16(a, 8),
                                            _mm512_and_si512(b, _mm512_set1_epi16(int16_t(0xff00))));
      return _mm512_or_si512(_mm512_and_si512(lo, _mm512_set1_epi16(0x00ff)), hi);
    } else if constexpr (sizeof(T) == 4) {
      return _mm512_mullo_epi32(a, b);
    } else {
      return _mm512_mullo_epi64(a, b);
    }
  }
  static V max(V a, V b) {
    if constexpr (sizeof(T) == 1) return kSigned ? _mm512_max_epi8(a, b) : _mm512_max_epu8(a, b);
    else if constexpr (sizeof(T) == 4) return kSigned ? _mm512_max_epi32(a, b) : _mm512_max_epu32(a, b);
    else return kSigned ? _mm512_max_epi64(a, b) : _mm512_max_epu64(a, b);
  }
  static V min(V a, V b) {
    if constexpr (sizeof(T) == 1) return kSigned ? _mm512_min_epi8(a, b) : _mm512_min_epu8(a, b);
    else if constexpr (sizeof(T) == 4) return kSigned ? _mm512_min_epi32(a, b) : _mm512_min_epu32(a, b);
    else return kSigned ? _mm512_min_epi64(a, b) : _mm512_min_epu64(a, b);
  }
};

// ------------------------------------------------------------------ loop --
template <class C>
typename C::M firstLanes(size_t count) {  // count < C::L
  return static_cast<typename C::M>((uint64_t(1) << count) - 1);
}

template <class C, Op kOp, bool kHasA, bool kPre, bool kPost>
void loop(void* dst, const void* a, const void* b, size_t n, typename C::Scalar s,
          typename C::Scalar d) {
  using S = typename C::S;
  using V = typename C::V;
  constexpr size_t L = size_t(C::L);
  S* out = static_cast<S*>(dst);
  const S* ia = static_cast<const S*>(a);
  const S* ib = static_cast<const S*>(b);
  const V vs = C::set1(s);
  [[maybe_unused]] const V vd = C::set1(d);

  auto compute = [&](V va, V vb) -> V {
    if constexpr (kPre) vb = C::mul(vb, vs);
    V r = vb;
    if constexpr (kHasA) {
      if constexpr (kOp == Op::Sum) r = C::add(va, vb);
      else if constexpr (kOp == Op::Prod) r = C::mul(va, vb);
      else if constexpr (kOp == Op::Max) r = C::max(va, vb);
      else r = C::min(va, vb);
    }
    if constexpr (kPost) r = C::div(r, vd);
    return r;
  };
  auto masked = [&](size_t i, size_t count) {
    const auto k = firstLanes<C>(count);
    const V vb = C::loadMask(ib + i, k);
    const V va = kHasA ? C::loadMask(ia + i, k) : vb;
    C::storeMask(out + i, k, compute(va, vb));
  };

  size_t i = 0;
  // Head: align the stores to the vector's store width when possible.
  constexpr uintptr_t kStoreBytes = L * sizeof(S);
  const uintptr_t addr = reinterpret_cast<uintptr_t>(out);
  if (addr % sizeof(S) == 0 && addr % kStoreBytes != 0) {
    size_t head = (kStoreBytes - addr % kStoreBytes) / sizeof(S);
    if (head > n) head = n;
    masked(0, head);
    i = head;
  }
  auto body = [&](auto put) {
    for (; i + 2 * L <= n; i += 2 * L) {
      const V vb0 = C::load(ib + i);
      const V vb1 = C::load(ib + i + L);
      const V va0 = kHasA ? C::load(ia + i) : vb0;
      const V va1 = kHasA ? C::load(ia + i + L) : vb1;
      put(out + i, compute(va0, vb0));
      put(out + i + L, compute(va1, vb1));
    }
    if (i + L <= n) {
      const V vb = C::load(ib + i);
      const V va = kHasA ? C::load(ia + i) : vb;
      put(out + i, compute(va, vb));
      i += L;
    }
  };
  // Large outputs bypass the cache (non-temporal stores need the aligned
  // destination the head gave us): saves the read-for-ownership of dst.
  if (n * sizeof(S) >= kStreamBytes && reinterpret_cast<uintptr_t>(out + i) % kStoreBytes == 0) {
    body([](S* p, V v) { C::stream(p, v); });
    _mm_sfence();
  } else {
    body([](S* p, V v) { C::store(p, v); });
  }
  if (i < n) masked(i, n - i);
}

template <class C, Op kOp, bool kHasA>
void byFlags(void* dst, const void* a, const void* b, size_t n, bool pre, bool post,
             typename C::Scalar s, typename C::Scalar d) {
  // Integer codecs have no divide (their average runs scalar): never
  // instantiate a post-divide loop for them.
  constexpr bool kCanDivide = requires(typename C::V v) { C::div(v, v); };
  if constexpr (kCanDivide) {
    if (post) {
      if (pre) loop<C, kOp, kHasA, true, true>(dst, a, b, n, s, d);
      else loop<C, kOp, kHasA, false, true>(dst, a, b, n, s, d);
      return;
    }
  }
  (void)post;
  if (pre) loop<C, kOp, kHasA, true, false>(dst, a, b, n, s, d);
  else loop<C, kOp, kHasA, false, false>(dst, a, b, n, s, d);
}

template <class C>
void byOp(Op op, void* dst, const void* a, const void* b, size_t n, bool pre, bool post,
          typename C::Scalar s, typename C::Scalar d) {
  if (a == nullptr) return byFlags<C, Op::Sum, false>(dst, a, b, n, pre, post, s, d);
  switch (op) {
    case Op::Sum: return byFlags<C, Op::Sum, true>(dst, a, b, n, pre, post, s, d);
    case Op::Prod: return byFlags<C, Op::Prod, true>(dst, a, b, n, pre, post, s, d);
    case Op::Max: return byFlags<C, Op::Max, true>(dst, a, b, n, pre, post, s, d);
    case Op::Min: return byFlags<C, Op::Min, true>(dst, a, b, n, pre, post, s, d);
  }
}

template <class C>
void runFloat(const ReduceFn& f, void* dst, const void* a, const void* b, size_t n, bool pre,
              bool post) {
  using Sc = typename C::Scalar;
  byOp<C>(f.op, dst, a, b, n, pre, post, pre ? Sc(f.scalar.f) : Sc(0), post ? Sc(f.divisor) : Sc(1));
}

template <class T>
void runInt(const ReduceFn& f, void* dst, const void* a, const void* b, size_t n, bool pre,
            bool post, bool applyPre, bool applyPost) {
  // No vector integer divide: the (rare) integer average runs scalar.
  if (post) return reduceScalar(f, dst, a, b, n, applyPre, applyPost);
  const T s = pre ? (std::is_signed_v<T> ? T(f.scalar.i) : T(f.scalar.u)) : T(0);
  byOp<IntC<T>>(f.op, dst, a, b, n, pre, false, s, T(0));
}

void reduceAvx512(const ReduceFn& f, void* dst, const void* a, const void* b, size_t n,
                  bool applyPre, bool applyPost) {
  if (n == 0) return;
  const bool pre = applyPre && f.premul;
  const bool post = applyPost && f.divisor != 0;
  switch (f.dtype) {
    case DType::Int8: return runInt<int8_t>(f, dst, a, b, n, pre, post, applyPre, applyPost);
    case DType::Uint8: return runInt<uint8_t>(f, dst, a, b, n, pre, post, applyPre, applyPost);
    case DType::Int32: return runInt<int32_t>(f, dst, a, b, n, pre, post, applyPre, applyPost);
    case DType::Uint32: return runInt<uint32_t>(f, dst, a, b, n, pre, post, applyPre, applyPost);
    case DType::Int64: return runInt<int64_t>(f, dst, a, b, n, pre, post, applyPre, applyPost);
    case DType::Uint64: return runInt<uint64_t>(f, dst, a, b, n, pre, post, applyPre, applyPost);
    case DType::Float16: return runFloat<F16>(f, dst, a, b, n, pre, post);
    case DType::Float32: return runFloat<F32>(f, dst, a, b, n, pre, post);
    case DType::Float64: return runFloat<F64>(f, dst, a, b, n, pre, post);
    case DType::Bfloat16: return runFloat<BF16>(f, dst, a, b, n, pre, post);
    case DType::Fp8E4M3: return runFloat<E4M3>(f, dst, a, b, n, pre, post);
    case DType::Fp8E5M2: return runFloat<E5M2>(f, dst, a, b, n, pre, post);
  }
}

// ------------------------------------------------ conversions (testing) --
template <class C>
void fromFloatC(const float* src, void* dst, size_t n) {
  using S = typename C::S;
  S* out = static_cast<S*>(dst);
  size_t i = 0;
  for (; i + 16 <= n; i += 16) C::store(out + i, _mm512_loadu_ps(src + i));
  if (i < n) {
    const __mmask16 k = firstLanes<C>(n - i);
    C::storeMask(out + i, k, _mm512_maskz_loadu_ps(k, src + i));
  }
}
template <class C>
void toFloatC(const void* src, float* dst, size_t n) {
  using S = typename C::S;
  const S* in = static_cast<const S*>(src);
  size_t i = 0;
  for (; i + 16 <= n; i += 16) _mm512_storeu_ps(dst + i, C::load(in + i));
  if (i < n) {
    const __mmask16 k = firstLanes<C>(n - i);
    _mm512_mask_storeu_ps(dst + i, k, C::loadMask(in + i, k));
  }
}

void fromFloatAvx512(DType t, const float* src, void* dst, size_t n) {
  switch (t) {
    case DType::Float32: return fromFloatC<F32>(src, dst, n);
    case DType::Float16: return fromFloatC<F16>(src, dst, n);
    case DType::Bfloat16: return fromFloatC<BF16>(src, dst, n);
    case DType::Fp8E4M3: return fromFloatC<E4M3>(src, dst, n);
    case DType::Fp8E5M2: return fromFloatC<E5M2>(src, dst, n);
    default: return;
  }
}
void toFloatAvx512(DType t, const void* src, float* dst, size_t n) {
  switch (t) {
    case DType::Float32: return toFloatC<F32>(src, dst, n);
    case DType::Float16: return toFloatC<F16>(src, dst, n);
    case DType::Bfloat16: return toFloatC<BF16>(src, dst, n);
    case DType::Fp8E4M3: return toFloatC<E4M3>(src, dst, n);
    case DType::Fp8E5M2: return toFloatC<E5M2>(src, dst, n);
    default: return;
  }
}

}  // namespace

const IsaImpl kAvx512Impl = {"avx512", &reduceAvx512, &fromFloatAvx512, &toFloatAvx512};

}  // namespace coll::kernels::detail
