// reduce_functors.h — per-element reduction functors shared by the host
// kernels and (later) the CUDA kernels.
//
// Everything here is header-only, has no state, and compiles as host code or,
// under nvcc, as __host__ __device__ code.  The scalar host path is built from
// these functors and is the reference every vectorised path must match bit for
// bit:
//
//   * Low-precision floats (fp16, bf16, fp8 e4m3/e5m2) widen exactly to float,
//     the op / pre-multiply / post-divide run in float, and the result is
//     rounded back once, round-to-nearest-even.
//   * float32 computes in float, float64 in double.
//   * Integers wrap (arithmetic done unsigned), the pre-multiply wraps, the
//     post-divide truncates toward zero.
//   * max/min on floating types: NaN if either operand is NaN; otherwise the
//     IEEE 754-2019 maximum/minimum, which orders -0 below +0 (so the result
//     never depends on operand order).
//   * Any NaN a floating kernel stores is the type's canonical quiet NaN
//     (positive, payload zero): float 0x7fc00000, double 0x7ff8000000000000,
//     fp16 0x7e00, bf16 0x7fc0, e4m3 0x7f, e5m2 0x7e.  NaN payloads never
//     depend on operand order or on the instruction set.
//
// The conversion helpers (narrow/widen) are the exact-rounding reference;
// the public coll::kernels::floatToHalf() & co. are thin wrappers.
#pragma once

#include <cstdint>
#include <cstring>
#include <type_traits>

#if defined(__CUDACC__)
#define COLL_HOST_DEVICE __host__ __device__
#else
#define COLL_HOST_DEVICE
#endif

namespace coll::kernels::fn {

// ---------------------------------------------------------------- bits ----

COLL_HOST_DEVICE inline uint32_t bitsOf(float f) {
  uint32_t u;
  memcpy(&u, &f, sizeof u);
  return u;
}
COLL_HOST_DEVICE inline float floatOf(uint32_t u) {
  float f;
  memcpy(&f, &u, sizeof f);
  return f;
}
COLL_HOST_DEVICE inline uint64_t bitsOf(double d) {
  uint64_t u;
  memcpy(&u, &d, sizeof u);
  return u;
}
COLL_HOST_DEVICE inline double doubleOf(uint64_t u) {
  double d;
  memcpy(&d, &u, sizeof d);
  return d;
}

template <class T> COLL_HOST_DEVICE inline bool isNaN(T x) { return x != x; }
template <class T> COLL_HOST_DEVICE inline bool signBit(T x) {
  if constexpr (sizeof(T) == 4) return (bitsOf(x) >> 31) != 0;
  else return (bitsOf(x) >> 63) != 0;
}

constexpr uint32_t kCanonicalNaN32 = 0x7fc00000u;
constexpr uint64_t kCanonicalNaN64 = 0x7ff8000000000000ull;

// ------------------------------------------- small float formats ----------
// A binary format with one sign bit, kExp exponent bits, kMant mantissa bits
// and bias kBias.  kMaxCode is the largest finite magnitude code, kOvfCode
// what a magnitude beyond it becomes (inf, or NaN for e4m3 which has none).
// kIeeeSpecials: all-ones exponent means inf/NaN (false for e4m3, where only
// S.1111.111 is NaN).
struct Fp16Format {
  static constexpr int kWidth = 16, kExp = 5, kMant = 10, kBias = 15;
  static constexpr uint32_t kMaxCode = 0x7bff, kOvfCode = 0x7c00, kCanonicalNaN = 0x7e00;
  static constexpr bool kIeeeSpecials = true;
};
struct Bf16Format {
  static constexpr int kWidth = 16, kExp = 8, kMant = 7, kBias = 127;
  static constexpr uint32_t kMaxCode = 0x7f7f, kOvfCode = 0x7f80, kCanonicalNaN = 0x7fc0;
  static constexpr bool kIeeeSpecials = true;
};
struct E4M3Format {
  static constexpr int kWidth = 8, kExp = 4, kMant = 3, kBias = 7;
  static constexpr uint32_t kMaxCode = 0x7e, kOvfCode = 0x7f, kCanonicalNaN = 0x7f;
  static constexpr bool kIeeeSpecials = false;
};
struct E5M2Format {
  static constexpr int kWidth = 8, kExp = 5, kMant = 2, kBias = 15;
  static constexpr uint32_t kMaxCode = 0x7b, kOvfCode = 0x7c, kCanonicalNaN = 0x7e;
  static constexpr bool kIeeeSpecials = true;
};

// Round a non-NaN float magnitude (sign bit clear) to the format's magnitude
// code, round to nearest even, saturating to kOvfCode.  Integer arithmetic
// only: no dependence on MXCSR/FTZ/DAZ.  The vector paths implement exactly
// this algorithm.
template <class F>
COLL_HOST_DEVICE inline uint32_t roundMagnitude(uint32_t abs) {
  constexpr int kSh = 23 - F::kMant;
  // Normal results: rebias the exponent, round on the kSh dropped bits.
  const uint32_t rn = (abs - (uint32_t(127 - F::kBias) << 23) + ((1u << (kSh - 1)) - 1u) +
                       ((abs >> kSh) & 1u)) >> kSh;
  uint32_t r = rn;
  if constexpr (F::kBias != 127) {  // (for bf16 the subnormal case is the same formula)
    // Subnormal results (or zero, or the smallest normal after rounding):
    // count units of the smallest subnormal 2^(1-bias-mant).
    constexpr uint32_t kMinNormalBits = uint32_t(127 + 1 - F::kBias) << 23;
    const uint32_t e = abs >> 23;
    const uint32_t m = (abs & 0x7fffffu) | (e != 0 ? 0x800000u : 0u);
    uint32_t s = uint32_t(151 - F::kBias - F::kMant) - (e != 0 ? e : 1u);  // >= 24 - kMant when used
    s = (s - 1u) > 30u ? 31u : s;  // clamp to [1, 31] (lanes not taken may be out of range)
    const uint32_t rs = (m + ((1u << (s - 1)) - 1u) + ((m >> s) & 1u)) >> s;
    r = abs < kMinNormalBits ? rs : rn;
  }
  return r > F::kMaxCode ? F::kOvfCode : r;
}

// float -> format, RNE.  NaN keeps its sign and the top payload bits and is
// made quiet (e4m3: S.1111.111).  Overflow: inf (fp16, bf16, e5m2) or NaN
// (e4m3), with the sign of the input.
template <class F>
COLL_HOST_DEVICE inline uint32_t narrow(float f) {
  const uint32_t bits = bitsOf(f);
  const uint32_t sign = (bits >> 31) << (F::kWidth - 1);
  const uint32_t abs = bits & 0x7fffffffu;
  if (abs > 0x7f800000u) {
    if constexpr (!F::kIeeeSpecials) return sign | F::kOvfCode;
    constexpr uint32_t kExpMask = ((1u << F::kExp) - 1u) << F::kMant;
    constexpr uint32_t kQuiet = 1u << (F::kMant - 1);
    return sign | kExpMask | kQuiet | ((abs & 0x7fffffu) >> (23 - F::kMant));
  }
  return sign | roundMagnitude<F>(abs);
}

// format -> float, exact.  NaN keeps its sign and payload and is made quiet.
template <class F>
COLL_HOST_DEVICE inline float widen(uint32_t v) {
  constexpr uint32_t kExpAll = (1u << F::kExp) - 1u;
  constexpr uint32_t kMantMask = (1u << F::kMant) - 1u;
  const uint32_t sign = ((v >> (F::kWidth - 1)) & 1u) << 31;
  const uint32_t e = (v >> F::kMant) & kExpAll;
  const uint32_t m = v & kMantMask;
  if constexpr (F::kIeeeSpecials) {
    if (e == kExpAll) {
      if (m == 0) return floatOf(sign | 0x7f800000u);
      return floatOf(sign | 0x7fc00000u | (m << (23 - F::kMant)));
    }
  } else {
    if (e == kExpAll && m == kMantMask) return floatOf(sign | 0x7fc00000u);
  }
  if (e == 0) {
    // m * 2^(1-bias-mant): exact (m is small, the scale a power of two, the
    // product a normal float for every format here but bf16, where it is
    // built directly).
    if constexpr (F::kBias == 127) {
      return floatOf(sign | (m << (23 - F::kMant)));
    } else {
      constexpr int kScaleExp = 1 - F::kBias - F::kMant;
      const float mag = float(m) * floatOf(uint32_t(127 + kScaleExp) << 23);
      return floatOf(sign | bitsOf(mag));
    }
  }
  return floatOf(sign | ((e + uint32_t(127 - F::kBias)) << 23) | (m << (23 - F::kMant)));
}

// Narrowing as the reduce kernels do it: any NaN becomes the canonical NaN.
template <class F>
COLL_HOST_DEVICE inline uint32_t narrowCanonical(float f) {
  const uint32_t bits = bitsOf(f);
  if ((bits & 0x7fffffffu) > 0x7f800000u) return F::kCanonicalNaN;
  return ((bits >> 31) << (F::kWidth - 1)) | roundMagnitude<F>(bits & 0x7fffffffu);
}

COLL_HOST_DEVICE inline float canonicalize(float x) {
  return isNaN(x) ? floatOf(kCanonicalNaN32) : x;
}
COLL_HOST_DEVICE inline double canonicalize(double x) {
  return isNaN(x) ? doubleOf(kCanonicalNaN64) : x;
}

// ------------------------------------------------------------- ops --------
// Compute types: float, double, or an integer type.  Integer arithmetic is
// done unsigned (wrap-around, no UB); W is at least `unsigned` wide so small
// types do not promote to signed int.
template <class T>
using WrapT = std::conditional_t<(sizeof(T) < sizeof(unsigned)), unsigned, std::make_unsigned_t<T>>;

template <class T>
struct SumOp {
  COLL_HOST_DEVICE T operator()(T a, T b) const {
    if constexpr (std::is_integral_v<T>) return T(WrapT<T>(a) + WrapT<T>(b));
    else return a + b;
  }
};

template <class T>
struct ProdOp {
  COLL_HOST_DEVICE T operator()(T a, T b) const {
    if constexpr (std::is_integral_v<T>) {
      return T(WrapT<T>(std::make_unsigned_t<T>(a)) * WrapT<T>(std::make_unsigned_t<T>(b)));
    } else {
      return a * b;
    }
  }
};

template <class T>
struct MaxOp {
  COLL_HOST_DEVICE T operator()(T a, T b) const {
    if constexpr (std::is_integral_v<T>) {
      return a > b ? a : b;
    } else {
      if (isNaN(a) || isNaN(b)) return a + b;  // a NaN; canonicalised on store
      if (a == b) return signBit(a) ? b : a;  // max(-0, +0) = +0
      return a > b ? a : b;
    }
  }
};

template <class T>
struct MinOp {
  COLL_HOST_DEVICE T operator()(T a, T b) const {
    if constexpr (std::is_integral_v<T>) {
      return a < b ? a : b;
    } else {
      if (isNaN(a) || isNaN(b)) return a + b;
      if (a == b) return signBit(a) ? a : b;  // min(-0, +0) = -0
      return a < b ? a : b;
    }
  }
};

// Pre-op: multiply by the pre-mul-sum scalar.
template <class T>
COLL_HOST_DEVICE inline T preMul(T x, T s) { return ProdOp<T>{}(x, s); }

// Post-op: divide by the divisor (avg).  Integers truncate toward zero, with
// the divisor taken as an unsigned 64-bit value (exact for every input,
// including INT64_MIN and divisors above INT64_MAX).  Floats divide in their
// compute type by the divisor converted to it.
template <class T>
COLL_HOST_DEVICE inline T postDiv(T x, uint64_t d) {
  if constexpr (std::is_integral_v<T>) {
    if constexpr (std::is_signed_v<T>) {
      const bool neg = x < 0;
      const uint64_t mag = neg ? uint64_t(0) - uint64_t(int64_t(x)) : uint64_t(int64_t(x));
      const uint64_t q = mag / d;
      return T(neg ? uint64_t(0) - q : q);
    } else {
      return T(uint64_t(x) / d);
    }
  } else {
    return x / T(d);
  }
}

}  // namespace coll::kernels::fn
