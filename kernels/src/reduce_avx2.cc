// reduce_avx2.cc — AVX2 + F16C kernels.  Compiled with -mavx2 -mf16c; only
// called after the dispatcher checked the CPU.  Everything lives in an
// anonymous namespace (see internal.h for why).
//
// Instructions: float32/float64 arithmetic in ymm (vaddps/vmulps/vdivps,
// vmaxps/vminps with a ±0/NaN fix-up), fp16 <-> float with F16C
// vcvtph2ps / vcvtps2ph (RNE immediate; checked bit-exact against the
// integer reference), bf16 and fp8 rounding with integer ops (vpsrlvd /
// vpsllvd for subnormals), vpackusdw / vpackuswb to pack, non-temporal
// stores for large outputs.  Heads (to align the stores) and tails (< one
// vector) run through the scalar reference.
#include <immintrin.h>

#include <type_traits>

#include "internal.h"

namespace coll::kernels::detail {
namespace {

// Outputs at least this large are written with non-temporal stores.
constexpr size_t kStreamBytes = size_t(1) << 23;

struct Arith32 {
  using V = __m256;
  using Scalar = float;
  static constexpr int L = 8;
  static V set1(float x) { return _mm256_set1_ps(x); }
  static V add(V a, V b) { return _mm256_add_ps(a, b); }
  static V mul(V a, V b) { return _mm256_mul_ps(a, b); }
  static V div(V a, V b) { return _mm256_div_ps(a, b); }
  // IEEE maximum/minimum: NaN if either is NaN (all-ones here, canonical on
  // store); -0 < +0.
  static V max(V a, V b) {
    V r = _mm256_max_ps(a, b);
    r = _mm256_blendv_ps(r, _mm256_and_ps(a, b), _mm256_cmp_ps(a, b, _CMP_EQ_OQ));
    return _mm256_or_ps(r, _mm256_cmp_ps(a, b, _CMP_UNORD_Q));
  }
  static V min(V a, V b) {
    V r = _mm256_min_ps(a, b);
    r = _mm256_blendv_ps(r, _mm256_or_ps(a, b), _mm256_cmp_ps(a, b, _CMP_EQ_OQ));
    return _mm256_or_ps(r, _mm256_cmp_ps(a, b, _CMP_UNORD_Q));
  }
  static V nanMask(V v) { return _mm256_cmp_ps(v, v, _CMP_UNORD_Q); }
  static V canon(V v) {
    return _mm256_blendv_ps(v, _mm256_castsi256_ps(_mm256_set1_epi32(0x7fc00000)), nanMask(v));
  }
};

struct Arith64 {
  using V = __m256d;
  using Scalar = double;
  static constexpr int L = 4;
  static V set1(double x) { return _mm256_set1_pd(x); }
  static V add(V a, V b) { return _mm256_add_pd(a, b); }
  static V mul(V a, V b) { return _mm256_mul_pd(a, b); }
  static V div(V a, V b) { return _mm256_div_pd(a, b); }
  static V max(V a, V b) {
    V r = _mm256_max_pd(a, b);
    r = _mm256_blendv_pd(r, _mm256_and_pd(a, b), _mm256_cmp_pd(a, b, _CMP_EQ_OQ));
    return _mm256_or_pd(r, _mm256_cmp_pd(a, b, _CMP_UNORD_Q));
  }
  static V min(V a, V b) {
    V r = _mm256_min_pd(a, b);
    r = _mm256_blendv_pd(r, _mm256_or_pd(a, b), _mm256_cmp_pd(a, b, _CMP_EQ_OQ));
    return _mm256_or_pd(r, _mm256_cmp_pd(a, b, _CMP_UNORD_Q));
  }
  static V canon(V v) {
    return _mm256_blendv_pd(v, _mm256_castsi256_pd(_mm256_set1_epi64x(0x7ff8000000000000ll)),
                            _mm256_cmp_pd(v, v, _CMP_UNORD_Q));
  }
};

// ---------------------------------------------------------------- codecs --
struct F32 : Arith32 {
  using S = float;
  static V load(const S* p) { return _mm256_loadu_ps(p); }
  static void store(S* p, V v) { _mm256_storeu_ps(p, canon(v)); }
  static void stream(S* p, V v) { _mm256_stream_ps(p, canon(v)); }
};

struct F64 : Arith64 {
  using S = double;
  static V load(const S* p) { return _mm256_loadu_pd(p); }
  static void store(S* p, V v) { _mm256_storeu_pd(p, canon(v)); }
  static void stream(S* p, V v) { _mm256_stream_pd(p, canon(v)); }
};

// 8 x 32-bit lanes (each < 2^16) -> 8 x 16-bit.
inline __m128i pack32to16(__m256i v) {
  return _mm_packus_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
}

struct F16 : Arith32 {
  using S = uint16_t;
  static V load(const S* p) { return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p))); }
  static __m128i narrow(V v) {
    const __m128i h = _mm256_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    const __m256i nan32 = _mm256_castps_si256(nanMask(v));
    const __m128i nan16 = _mm_packs_epi32(_mm256_castsi256_si128(nan32), _mm256_extracti128_si256(nan32, 1));
    return _mm_blendv_epi8(h, _mm_set1_epi16(0x7e00), nan16);
  }
  static void store(S* p, V v) { _mm_storeu_si128(reinterpret_cast<__m128i*>(p), narrow(v)); }
  static void stream(S* p, V v) { _mm_stream_si128(reinterpret_cast<__m128i*>(p), narrow(v)); }
};

struct BF16 : Arith32 {
  using S = uint16_t;
  static V load(const S* p) {
    const __m128i raw = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
    return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(raw), 16));
  }
  static __m128i narrow(V v) {
    const __m256i bits = _mm256_castps_si256(v);
    const __m256i odd = _mm256_and_si256(_mm256_srli_epi32(bits, 16), _mm256_set1_epi32(1));
    __m256i r = _mm256_add_epi32(_mm256_add_epi32(bits, _mm256_set1_epi32(0x7fff)), odd);
    r = _mm256_srli_epi32(r, 16);
    r = _mm256_blendv_epi8(r, _mm256_set1_epi32(0x7fc0), _mm256_castps_si256(nanMask(v)));
    return pack32to16(r);
  }
  static void store(S* p, V v) { _mm_storeu_si128(reinterpret_cast<__m128i*>(p), narrow(v)); }
  static void stream(S* p, V v) { _mm_stream_si128(reinterpret_cast<__m128i*>(p), narrow(v)); }
};

// Integer RNE narrowing of 8 floats to a small format (the vector form of
// fn::roundMagnitude / fn::narrowCanonical), one result per 32-bit lane.
// Magnitudes are < 2^31, so signed compares are safe.
template <int kMant, int kBias, uint32_t kMaxCode, uint32_t kOvfCode, uint32_t kNaNCode, int kWidth>
__m256i narrowSmall(__m256 v) {
  const __m256i bits = _mm256_castps_si256(v);
  const __m256i one = _mm256_set1_epi32(1);
  const __m256i abs = _mm256_and_si256(bits, _mm256_set1_epi32(0x7fffffff));
  const __m256i sign = _mm256_slli_epi32(_mm256_srli_epi32(bits, 31), kWidth - 1);
  constexpr int kSh = 23 - kMant;
  const __m256i odd = _mm256_and_si256(_mm256_srli_epi32(abs, kSh), one);
  __m256i rn = _mm256_sub_epi32(abs, _mm256_set1_epi32(int((127 - kBias) << 23)));
  rn = _mm256_add_epi32(rn, _mm256_set1_epi32((1 << (kSh - 1)) - 1));
  rn = _mm256_srli_epi32(_mm256_add_epi32(rn, odd), kSh);
  const __m256i e = _mm256_max_epu32(_mm256_srli_epi32(abs, 23), one);
  __m256i m = _mm256_and_si256(abs, _mm256_set1_epi32(0x7fffff));
  m = _mm256_or_si256(m, _mm256_and_si256(_mm256_cmpgt_epi32(abs, _mm256_set1_epi32(0x7fffff)),
                                          _mm256_set1_epi32(0x800000)));
  const __m256i s = _mm256_min_epu32(_mm256_sub_epi32(_mm256_set1_epi32(151 - kBias - kMant), e),
                                     _mm256_set1_epi32(31));
  const __m256i half = _mm256_sub_epi32(_mm256_sllv_epi32(one, _mm256_sub_epi32(s, one)), one);
  const __m256i oddS = _mm256_and_si256(_mm256_srlv_epi32(m, s), one);
  const __m256i rs = _mm256_srlv_epi32(_mm256_add_epi32(_mm256_add_epi32(m, half), oddS), s);
  constexpr uint32_t kMinNormalBits = uint32_t(127 + 1 - kBias) << 23;
  __m256i r = _mm256_blendv_epi8(rn, rs, _mm256_cmpgt_epi32(_mm256_set1_epi32(int(kMinNormalBits)), abs));
  r = _mm256_blendv_epi8(r, _mm256_set1_epi32(int(kOvfCode)),
                         _mm256_cmpgt_epi32(r, _mm256_set1_epi32(int(kMaxCode))));
  r = _mm256_or_si256(r, sign);
  return _mm256_blendv_epi8(r, _mm256_set1_epi32(int(kNaNCode)),
                            _mm256_cmpgt_epi32(abs, _mm256_set1_epi32(0x7f800000)));
}

// 8 x 32-bit lanes (each < 2^8) -> 8 bytes.
inline void store8Bytes(uint8_t* p, __m256i v) {
  const __m128i w = pack32to16(v);
  _mm_storel_epi64(reinterpret_cast<__m128i*>(p), _mm_packus_epi16(w, w));
}
inline __m128i load8Bytes(const uint8_t* p) { return _mm_loadl_epi64(reinterpret_cast<const __m128i*>(p)); }

struct E4M3 : Arith32 {
  using S = uint8_t;
  static V load(const S* p) {
    const __m256i v = _mm256_cvtepu8_epi32(load8Bytes(p));
    const __m256i sign = _mm256_slli_epi32(_mm256_and_si256(v, _mm256_set1_epi32(0x80)), 24);
    const __m256i e = _mm256_and_si256(_mm256_srli_epi32(v, 3), _mm256_set1_epi32(0xf));
    const __m256i m = _mm256_and_si256(v, _mm256_set1_epi32(0x7));
    const __m256i normal = _mm256_or_si256(_mm256_slli_epi32(_mm256_add_epi32(e, _mm256_set1_epi32(120)), 23),
                                           _mm256_slli_epi32(m, 20));
    const __m256i sub = _mm256_castps_si256(_mm256_mul_ps(_mm256_cvtepi32_ps(m), _mm256_set1_ps(0x1p-9f)));
    __m256i r = _mm256_blendv_epi8(normal, sub, _mm256_cmpeq_epi32(e, _mm256_setzero_si256()));
    const __m256i mag = _mm256_and_si256(v, _mm256_set1_epi32(0x7f));
    r = _mm256_blendv_epi8(r, _mm256_set1_epi32(0x7fc00000), _mm256_cmpeq_epi32(mag, _mm256_set1_epi32(0x7f)));
    return _mm256_castsi256_ps(_mm256_or_si256(r, sign));
  }
  static void store(S* p, V v) { store8Bytes(p, narrowSmall<3, 7, 0x7e, 0x7f, 0x7f, 8>(v)); }
  static void stream(S* p, V v) { store(p, v); }  // 8-byte pieces: keep cached
};

struct E5M2 : Arith32 {
  using S = uint8_t;
  // e5m2 is the top byte of an fp16: widen through vcvtph2ps (exact).
  static V load(const S* p) { return _mm256_cvtph_ps(_mm_slli_epi16(_mm_cvtepu8_epi16(load8Bytes(p)), 8)); }
  static void store(S* p, V v) { store8Bytes(p, narrowSmall<2, 15, 0x7b, 0x7c, 0x7e, 8>(v)); }
  static void stream(S* p, V v) { store(p, v); }  // 8-byte pieces: keep cached
};

// -------------------------------------------------------------- integers --
template <class T>
struct IntC {
  using S = T;
  using V = __m256i;
  using Scalar = T;
  static constexpr int L = int(32 / sizeof(T));
  static constexpr bool kSigned = std::is_signed_v<T>;

  static V load(const S* p) { return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)); }
  static void store(S* p, V v) { _mm256_storeu_si256(reinterpret_cast<__m256i*>(p), v); }
  static void stream(S* p, V v) { _mm256_stream_si256(reinterpret_cast<__m256i*>(p), v); }
  static V set1(T x) {
    if constexpr (sizeof(T) == 1) return _mm256_set1_epi8(char(x));
    else if constexpr (sizeof(T) == 4) return _mm256_set1_epi32(int(x));
    else return _mm256_set1_epi64x(static_cast<long long>(x));
  }
  static V add(V a, V b) {
    if constexpr (sizeof(T) == 1) return _mm256_add_epi8(a, b);
    else if constexpr (sizeof(T) == 4) return _mm256_add_epi32(a, b);
    else return _mm256_add_epi64(a, b);
  }
  static V mul(V a, V b) {
    if constexpr (sizeof(T) == 1) {
      const __m256i lo = _mm256_mullo_epi16(a, b);
      const __m256i hi = _mm256_mullo_epi16(_mm256_srli_epi16(a, 8),
                                            _mm256_and_si256(b, _mm256_set1_epi16(int16_t(0xff00))));
      return _mm256_or_si256(_mm256_and_si256(lo, _mm256_set1_epi16(0x00ff)), hi);
    } else if constexpr (sizeof(T) == 4) {
      return _mm256_mullo_epi32(a, b);
    } else {
      // lo*lo + ((lo*hi + hi*lo) << 32), all mod 2^64.
      const __m256i ll = _mm256_mul_epu32(a, b);
      const __m256i lh = _mm256_mul_epu32(a, _mm256_srli_epi64(b, 32));
      const __m256i hl = _mm256_mul_epu32(_mm256_srli_epi64(a, 32), b);
      return _mm256_add_epi64(ll, _mm256_slli_epi64(_mm256_add_epi64(lh, hl), 32));
    }
  }
  // a > b, per 64-bit lane (signed or unsigned).
  static V gt64(V a, V b) {
    if constexpr (kSigned) {
      return _mm256_cmpgt_epi64(a, b);
    } else {
      const __m256i flip = _mm256_set1_epi64x(static_cast<long long>(0x8000000000000000ull));
      return _mm256_cmpgt_epi64(_mm256_xor_si256(a, flip), _mm256_xor_si256(b, flip));
    }
  }
  static V max(V a, V b) {
    if constexpr (sizeof(T) == 1) return kSigned ? _mm256_max_epi8(a, b) : _mm256_max_epu8(a, b);
    else if constexpr (sizeof(T) == 4) return kSigned ? _mm256_max_epi32(a, b) : _mm256_max_epu32(a, b);
    else return _mm256_blendv_epi8(b, a, gt64(a, b));
  }
  static V min(V a, V b) {
    if constexpr (sizeof(T) == 1) return kSigned ? _mm256_min_epi8(a, b) : _mm256_min_epu8(a, b);
    else if constexpr (sizeof(T) == 4) return kSigned ? _mm256_min_epi32(a, b) : _mm256_min_epu32(a, b);
    else return _mm256_blendv_epi8(a, b, gt64(a, b));
  }
};

// ------------------------------------------------------------------ loop --
// What the scalar head/tail needs to reproduce the call.
struct Call {
  const ReduceFn* f;
  bool applyPre, applyPost;
};

template <class S>
void scalarPart(const Call& c, S* out, const S* ia, const S* ib, size_t i, size_t count) {
  reduceScalar(*c.f, out + i, ia != nullptr ? ia + i : nullptr, ib + i, count, c.applyPre, c.applyPost);
}

template <class C, Op kOp, bool kHasA, bool kPre, bool kPost>
void loop(const Call& call, void* dst, const void* a, const void* b, size_t n,
          typename C::Scalar s, typename C::Scalar d) {
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

  size_t i = 0;
  constexpr uintptr_t kStoreBytes = L * sizeof(S);
  const uintptr_t addr = reinterpret_cast<uintptr_t>(out);
  if (addr % sizeof(S) == 0 && addr % kStoreBytes != 0) {
    size_t head = (kStoreBytes - addr % kStoreBytes) / sizeof(S);
    if (head > n) head = n;
    scalarPart(call, out, ia, ib, 0, head);
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
  if (i < n) scalarPart(call, out, ia, ib, i, n - i);
}

template <class C, Op kOp, bool kHasA>
void byFlags(const Call& c, void* dst, const void* a, const void* b, size_t n, bool pre, bool post,
             typename C::Scalar s, typename C::Scalar d) {
  // Integer codecs have no divide (their average runs scalar): never
  // instantiate a post-divide loop for them.
  constexpr bool kCanDivide = requires(typename C::V v) { C::div(v, v); };
  if constexpr (kCanDivide) {
    if (post) {
      if (pre) loop<C, kOp, kHasA, true, true>(c, dst, a, b, n, s, d);
      else loop<C, kOp, kHasA, false, true>(c, dst, a, b, n, s, d);
      return;
    }
  }
  (void)post;
  if (pre) loop<C, kOp, kHasA, true, false>(c, dst, a, b, n, s, d);
  else loop<C, kOp, kHasA, false, false>(c, dst, a, b, n, s, d);
}

template <class C>
void byOp(const Call& c, void* dst, const void* a, const void* b, size_t n, bool pre, bool post,
          typename C::Scalar s, typename C::Scalar d) {
  if (a == nullptr) return byFlags<C, Op::Sum, false>(c, dst, a, b, n, pre, post, s, d);
  switch (c.f->op) {
    case Op::Sum: return byFlags<C, Op::Sum, true>(c, dst, a, b, n, pre, post, s, d);
    case Op::Prod: return byFlags<C, Op::Prod, true>(c, dst, a, b, n, pre, post, s, d);
    case Op::Max: return byFlags<C, Op::Max, true>(c, dst, a, b, n, pre, post, s, d);
    case Op::Min: return byFlags<C, Op::Min, true>(c, dst, a, b, n, pre, post, s, d);
  }
}

template <class C>
void runFloat(const Call& c, void* dst, const void* a, const void* b, size_t n, bool pre, bool post) {
  using Sc = typename C::Scalar;
  const ReduceFn& f = *c.f;
  byOp<C>(c, dst, a, b, n, pre, post, pre ? Sc(f.scalar.f) : Sc(0), post ? Sc(f.divisor) : Sc(1));
}

template <class T>
void runInt(const Call& c, void* dst, const void* a, const void* b, size_t n, bool pre, bool post) {
  const ReduceFn& f = *c.f;
  // No vector integer divide: the (rare) integer average runs scalar.
  if (post) return reduceScalar(f, dst, a, b, n, c.applyPre, c.applyPost);
  const T s = pre ? (std::is_signed_v<T> ? T(f.scalar.i) : T(f.scalar.u)) : T(0);
  byOp<IntC<T>>(c, dst, a, b, n, pre, false, s, T(0));
}

void reduceAvx2(const ReduceFn& f, void* dst, const void* a, const void* b, size_t n,
                bool applyPre, bool applyPost) {
  if (n == 0) return;
  const bool pre = applyPre && f.premul;
  const bool post = applyPost && f.divisor != 0;
  const Call c{&f, applyPre, applyPost};
  switch (f.dtype) {
    case DType::Int8: return runInt<int8_t>(c, dst, a, b, n, pre, post);
    case DType::Uint8: return runInt<uint8_t>(c, dst, a, b, n, pre, post);
    case DType::Int32: return runInt<int32_t>(c, dst, a, b, n, pre, post);
    case DType::Uint32: return runInt<uint32_t>(c, dst, a, b, n, pre, post);
    case DType::Int64: return runInt<int64_t>(c, dst, a, b, n, pre, post);
    case DType::Uint64: return runInt<uint64_t>(c, dst, a, b, n, pre, post);
    case DType::Float16: return runFloat<F16>(c, dst, a, b, n, pre, post);
    case DType::Float32: return runFloat<F32>(c, dst, a, b, n, pre, post);
    case DType::Float64: return runFloat<F64>(c, dst, a, b, n, pre, post);
    case DType::Bfloat16: return runFloat<BF16>(c, dst, a, b, n, pre, post);
    case DType::Fp8E4M3: return runFloat<E4M3>(c, dst, a, b, n, pre, post);
    case DType::Fp8E5M2: return runFloat<E5M2>(c, dst, a, b, n, pre, post);
  }
}

// ------------------------------------------------ conversions (testing) --
template <class C>
void fromFloatC(DType t, const float* src, void* dst, size_t n) {
  using S = typename C::S;
  S* out = static_cast<S*>(dst);
  size_t i = 0;
  for (; i + 8 <= n; i += 8) C::store(out + i, _mm256_loadu_ps(src + i));
  if (i < n) kScalarImpl.fromFloat(t, src + i, out + i, n - i);
}
template <class C>
void toFloatC(DType t, const void* src, float* dst, size_t n) {
  using S = typename C::S;
  const S* in = static_cast<const S*>(src);
  size_t i = 0;
  for (; i + 8 <= n; i += 8) _mm256_storeu_ps(dst + i, C::load(in + i));
  if (i < n) kScalarImpl.toFloat(t, in + i, dst + i, n - i);
}

void fromFloatAvx2(DType t, const float* src, void* dst, size_t n) {
  switch (t) {
    case DType::Float32: return fromFloatC<F32>(t, src, dst, n);
    case DType::Float16: return fromFloatC<F16>(t, src, dst, n);
    case DType::Bfloat16: return fromFloatC<BF16>(t, src, dst, n);
    case DType::Fp8E4M3: return fromFloatC<E4M3>(t, src, dst, n);
    case DType::Fp8E5M2: return fromFloatC<E5M2>(t, src, dst, n);
    default: return;
  }
}
void toFloatAvx2(DType t, const void* src, float* dst, size_t n) {
  switch (t) {
    case DType::Float32: return toFloatC<F32>(t, src, dst, n);
    case DType::Float16: return toFloatC<F16>(t, src, dst, n);
    case DType::Bfloat16: return toFloatC<BF16>(t, src, dst, n);
    case DType::Fp8E4M3: return toFloatC<E4M3>(t, src, dst, n);
    case DType::Fp8E5M2: return toFloatC<E5M2>(t, src, dst, n);
    default: return;
  }
}

}  // namespace

const IsaImpl kAvx2Impl = {"avx2", &reduceAvx2, &fromFloatAvx2, &toFloatAvx2};

}  // namespace coll::kernels::detail
