// kernel_test_util.cc — random data and the independent reference.
#include "kernel_test_util.h"

#include <algorithm>
#include <type_traits>

#include "internal.h"

namespace ktest {

std::vector<std::string> availableIsas() {
  std::vector<std::string> out;
  for (const char* name : {"scalar", "avx2", "avx512"})
    if (ck::detail::findIsa(name) != nullptr) out.push_back(name);
  return out;
}

namespace {

float moderate(std::mt19937_64& rng, int minExp, int maxExp) {
  const float mant = 1.0f + float(rng() & 0xffffff) / float(1 << 24);
  const int e = minExp + int(rng() % uint64_t(maxExp - minExp + 1));
  const float v = std::ldexp(mant, e);
  return (rng() & 1) ? -v : v;
}

}  // namespace

float randomFloat32(std::mt19937_64& rng) {
  const uint32_t sign = (rng() & 1) ? 0x80000000u : 0u;
  switch (rng() % 24) {
    case 0: return bitCast<float>(sign | 0x7f800000u | uint32_t(1 + rng() % 0x7fffff));  // NaN (q or s)
    case 1: return bitCast<float>(sign | 0x7f800000u);                                  // inf
    case 2: return bitCast<float>(sign);                                                // ±0
    case 3: return bitCast<float>(sign | uint32_t(1 + rng() % 0x7fffff));               // subnormal
    case 4: {
      static const float kEdges[] = {std::numeric_limits<float>::max(), std::numeric_limits<float>::min(),
                                     std::numeric_limits<float>::denorm_min(), 1.0f, 0.5f, 65504.0f,
                                     448.0f, 57344.0f, 0x1p-14f, 0x1p-24f, 0x1p-126f, 3.0f};
      const float v = kEdges[rng() % (sizeof kEdges / sizeof kEdges[0])];
      return sign ? -v : v;
    }
    case 5: return bitCast<float>(uint32_t(rng()));  // any pattern
    case 6: return moderate(rng, -140, 127);         // wide range, incl. subnormal-ish
    default: return moderate(rng, -20, 20);
  }
}

double randomFloat64(std::mt19937_64& rng) {
  const uint64_t sign = (rng() & 1) ? 0x8000000000000000ull : 0u;
  switch (rng() % 24) {
    case 0: return bitCast<double>(sign | 0x7ff0000000000000ull | (1 + rng() % 0xfffffffffffffull));
    case 1: return bitCast<double>(sign | 0x7ff0000000000000ull);
    case 2: return bitCast<double>(sign);
    case 3: return bitCast<double>(sign | (1 + rng() % 0xfffffffffffffull));
    case 4: {
      static const double kEdges[] = {std::numeric_limits<double>::max(), std::numeric_limits<double>::min(),
                                      std::numeric_limits<double>::denorm_min(), 1.0, 0.5, 3.0,
                                      0x1p-1022, 0x1p1023};
      const double v = kEdges[rng() % (sizeof kEdges / sizeof kEdges[0])];
      return sign ? -v : v;
    }
    case 5: return bitCast<double>(uint64_t(rng()));
    case 6: {
      const double mant = 1.0 + double(rng() >> 11) / double(1ull << 53);
      const double v = std::ldexp(mant, -1070 + int(rng() % 2094));
      return sign ? -v : v;
    }
    default: {
      const double mant = 1.0 + double(rng() >> 11) / double(1ull << 53);
      const double v = std::ldexp(mant, -30 + int(rng() % 61));
      return sign ? -v : v;
    }
  }
}

namespace {

template <class T> void fillInt(T* p, size_t n, std::mt19937_64& rng) {
  using L = std::numeric_limits<T>;
  const T edges[] = {L::min(), L::max(), T(0), T(1), T(-1), T(L::min() + 1), T(L::max() - 1), T(2)};
  for (size_t i = 0; i < n; ++i) {
    if (rng() % 6 == 0) p[i] = edges[rng() % (sizeof edges / sizeof edges[0])];
    else p[i] = T(rng());
  }
}

template <class S, class Conv>
void fillSmall(S* p, size_t n, std::mt19937_64& rng, int minExp, int maxExp, Conv conv) {
  for (size_t i = 0; i < n; ++i) {
    if (rng() % 4 == 0) p[i] = S(rng());  // any code: NaN, inf, subnormal, ...
    else p[i] = conv(moderate(rng, minExp, maxExp));
  }
}

}  // namespace

void fillRandom(ck::DType t, void* p, size_t n, std::mt19937_64& rng) {
  switch (t) {
    case ck::DType::Int8: return fillInt(static_cast<int8_t*>(p), n, rng);
    case ck::DType::Uint8: return fillInt(static_cast<uint8_t*>(p), n, rng);
    case ck::DType::Int32: return fillInt(static_cast<int32_t*>(p), n, rng);
    case ck::DType::Uint32: return fillInt(static_cast<uint32_t*>(p), n, rng);
    case ck::DType::Int64: return fillInt(static_cast<int64_t*>(p), n, rng);
    case ck::DType::Uint64: return fillInt(static_cast<uint64_t*>(p), n, rng);
    case ck::DType::Float32:
      for (size_t i = 0; i < n; ++i) static_cast<float*>(p)[i] = randomFloat32(rng);
      return;
    case ck::DType::Float64:
      for (size_t i = 0; i < n; ++i) static_cast<double*>(p)[i] = randomFloat64(rng);
      return;
    case ck::DType::Float16:
      return fillSmall(static_cast<uint16_t*>(p), n, rng, -26, 16, ck::floatToHalf);
    case ck::DType::Bfloat16:
      return fillSmall(static_cast<uint16_t*>(p), n, rng, -40, 40, ck::floatToBf16);
    case ck::DType::Fp8E4M3:
      return fillSmall(static_cast<uint8_t*>(p), n, rng, -10, 9, ck::floatToE4M3);
    case ck::DType::Fp8E5M2:
      return fillSmall(static_cast<uint8_t*>(p), n, rng, -17, 16, ck::floatToE5M2);
  }
}

// ------------------------------------------------------------- reference --
namespace {

template <class F> F refNaN() { return std::numeric_limits<F>::quiet_NaN(); }

template <class F> F refMax(F a, F b) {
  if (std::isnan(a) || std::isnan(b)) return refNaN<F>();
  if (a == 0 && b == 0) return (std::signbit(a) && std::signbit(b)) ? F(-0.0) : F(0.0);
  return a > b ? a : b;
}
template <class F> F refMin(F a, F b) {
  if (std::isnan(a) || std::isnan(b)) return refNaN<F>();
  if (a == 0 && b == 0) return (std::signbit(a) || std::signbit(b)) ? F(-0.0) : F(0.0);
  return a < b ? a : b;
}

// float computation, each operation correctly rounded to float (computing
// in double and rounding once is exact for + - * / of floats).
float refFloatPipeline(const RefParams& p, float a, float b) {
  const float s = float(p.scalar.f);
  const float d = float(p.divisor);
  float x = b;
  if (p.pre) x = float(double(x) * double(s));
  float r = x;
  if (p.hasA) {
    switch (p.op) {
      case ck::Op::Sum: r = float(double(a) + double(x)); break;
      case ck::Op::Prod: r = float(double(a) * double(x)); break;
      case ck::Op::Max: r = refMax(a, x); break;
      case ck::Op::Min: r = refMin(a, x); break;
    }
  }
  if (p.post) r = float(double(r) / double(d));
  return r;
}

// double computation, each operation correctly rounded to double via
// binary128 (113-bit significand >= 2*53+2).
double refDoublePipeline(const RefParams& p, double a, double b) {
  using Q = __float128;
  const double s = p.scalar.f;
  const double d = double(p.divisor);
  double x = b;
  if (p.pre) x = double(Q(x) * Q(s));
  double r = x;
  if (p.hasA) {
    switch (p.op) {
      case ck::Op::Sum: r = double(Q(a) + Q(x)); break;
      case ck::Op::Prod: r = double(Q(a) * Q(x)); break;
      case ck::Op::Max: r = refMax(a, x); break;
      case ck::Op::Min: r = refMin(a, x); break;
    }
  }
  if (p.post) r = double(Q(r) / Q(d));
  return r;
}

template <class T> T refInt(const RefParams& p, T a, T b) {
  using U = std::make_unsigned_t<T>;
  using u128 = unsigned __int128;
  const T s = std::is_signed_v<T> ? T(p.scalar.i) : T(p.scalar.u);
  T x = b;
  if (p.pre) x = T(U(u128(U(x)) * u128(U(s))));
  T r = x;
  if (p.hasA) {
    switch (p.op) {
      case ck::Op::Sum: r = T(U(u128(U(a)) + u128(U(x)))); break;
      case ck::Op::Prod: r = T(U(u128(U(a)) * u128(U(x)))); break;
      case ck::Op::Max: r = std::max(a, x); break;
      case ck::Op::Min: r = std::min(a, x); break;
    }
  }
  if (p.post) {
    if constexpr (std::is_signed_v<T>) r = T(__int128(r) / __int128(p.divisor));  // truncates
    else r = T(uint64_t(r) / p.divisor);
  }
  return r;
}

template <class T> void intCase(const RefParams& p, const void* a, const void* b, void* out) {
  T va{}, vb;
  if (p.hasA) std::memcpy(&va, a, sizeof(T));
  std::memcpy(&vb, b, sizeof(T));
  const T r = refInt<T>(p, va, vb);
  std::memcpy(out, &r, sizeof(T));
}

template <class S, class Widen, class Narrow>
void smallCase(const RefParams& p, const void* a, const void* b, void* out, Widen widen, Narrow narrow,
               S canonicalNaN) {
  S ca{}, cb;
  if (p.hasA) std::memcpy(&ca, a, sizeof(S));
  std::memcpy(&cb, b, sizeof(S));
  const float r = refFloatPipeline(p, p.hasA ? widen(ca) : 0.0f, widen(cb));
  const S code = std::isnan(r) ? canonicalNaN : S(narrow(r));
  std::memcpy(out, &code, sizeof(S));
}

}  // namespace

void referenceElement(ck::DType t, const RefParams& p, const void* a, const void* b, void* out) {
  switch (t) {
    case ck::DType::Int8: return intCase<int8_t>(p, a, b, out);
    case ck::DType::Uint8: return intCase<uint8_t>(p, a, b, out);
    case ck::DType::Int32: return intCase<int32_t>(p, a, b, out);
    case ck::DType::Uint32: return intCase<uint32_t>(p, a, b, out);
    case ck::DType::Int64: return intCase<int64_t>(p, a, b, out);
    case ck::DType::Uint64: return intCase<uint64_t>(p, a, b, out);
    case ck::DType::Float32: {
      float va = 0, vb;
      if (p.hasA) std::memcpy(&va, a, 4);
      std::memcpy(&vb, b, 4);
      const float r = refFloatPipeline(p, va, vb);
      const uint32_t bits = std::isnan(r) ? kNaN32 : bitCast<uint32_t>(r);
      std::memcpy(out, &bits, 4);
      return;
    }
    case ck::DType::Float64: {
      double va = 0, vb;
      if (p.hasA) std::memcpy(&va, a, 8);
      std::memcpy(&vb, b, 8);
      const double r = refDoublePipeline(p, va, vb);
      const uint64_t bits = std::isnan(r) ? kNaN64 : bitCast<uint64_t>(r);
      std::memcpy(out, &bits, 8);
      return;
    }
    case ck::DType::Float16:
      return smallCase<uint16_t>(p, a, b, out, ck::halfToFloat, ck::floatToHalf, kNaNHalf);
    case ck::DType::Bfloat16:
      return smallCase<uint16_t>(p, a, b, out, ck::bf16ToFloat, ck::floatToBf16, kNaNBf16);
    case ck::DType::Fp8E4M3:
      return smallCase<uint8_t>(p, a, b, out, ck::e4m3ToFloat, ck::floatToE4M3, kNaNE4M3);
    case ck::DType::Fp8E5M2:
      return smallCase<uint8_t>(p, a, b, out, ck::e5m2ToFloat, ck::floatToE5M2, kNaNE5M2);
  }
}

}  // namespace ktest
