// conversions_test.cc — the public scalar conversions: every fp16/bf16/fp8
// bit pattern, hand-computed round-to-nearest-even cases, and narrowing of
// many floats (including every midpoint between neighbours) against an
// independent nearest-value search.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <vector>

#include "coll/kernels/reduce.h"
#include "kernel_test_util.h"

namespace ck = coll::kernels;
using ktest::bitCast;

namespace {

struct Format {
  const char* name;
  int width, exp, mant, bias;
  bool ieee;  // all-ones exponent = inf/NaN; otherwise only S.1111.111 is NaN (e4m3)
  uint32_t (*narrow)(float);
  float (*widen)(uint32_t);
};

const Format kFormats[] = {
    {"float16", 16, 5, 10, 15, true, [](float f) { return uint32_t(ck::floatToHalf(f)); },
     [](uint32_t v) { return ck::halfToFloat(uint16_t(v)); }},
    {"bfloat16", 16, 8, 7, 127, true, [](float f) { return uint32_t(ck::floatToBf16(f)); },
     [](uint32_t v) { return ck::bf16ToFloat(uint16_t(v)); }},
    {"f8e4m3", 8, 4, 3, 7, false, [](float f) { return uint32_t(ck::floatToE4M3(f)); },
     [](uint32_t v) { return ck::e4m3ToFloat(uint8_t(v)); }},
    {"f8e5m2", 8, 5, 2, 15, true, [](float f) { return uint32_t(ck::floatToE5M2(f)); },
     [](uint32_t v) { return ck::e5m2ToFloat(uint8_t(v)); }},
};

bool isNaNCode(const Format& f, uint32_t v) {
  const uint32_t mag = v & ((1u << (f.width - 1)) - 1);
  const uint32_t expAll = ((1u << f.exp) - 1) << f.mant;
  if (f.ieee) return (mag & expAll) == expAll && (mag & ((1u << f.mant) - 1)) != 0;
  return mag == ((1u << (f.width - 1)) - 1);
}
bool isInfCode(const Format& f, uint32_t v) {
  const uint32_t mag = v & ((1u << (f.width - 1)) - 1);
  return f.ieee && mag == (((1u << f.exp) - 1) << f.mant);
}

// Value of a non-NaN, non-inf code from the definition of the format.
double valueOf(const Format& f, uint32_t v) {
  const bool neg = (v >> (f.width - 1)) & 1;
  const int e = int((v >> f.mant) & ((1u << f.exp) - 1));
  const double m = double(v & ((1u << f.mant) - 1));
  double mag;
  if (e == 0) mag = std::ldexp(m, 1 - f.bias - f.mant);
  else mag = std::ldexp(m + std::ldexp(1.0, f.mant), e - f.bias - f.mant);
  return neg ? -mag : mag;
}

// Largest finite magnitude code.
uint32_t maxCode(const Format& f) {
  const uint32_t all = (1u << (f.width - 1)) - 1;
  if (f.ieee) return (((1u << f.exp) - 1) << f.mant) - 1;
  return all - 1;  // e4m3: 0x7e
}

// Independent RNE narrowing: nearest finite value by search, ties to the even
// code; beyond the largest value by at least half an ulp (tie: even) the
// result is the overflow code (inf, or NaN for e4m3).
struct RefNarrow {
  const Format& f;
  std::vector<double> values;  // values[c] for magnitude codes 0..maxCode, plus one virtual
  explicit RefNarrow(const Format& fmt) : f(fmt) {
    const uint32_t mc = maxCode(f);
    for (uint32_t c = 0; c <= mc; ++c) values.push_back(valueOf(f, c));
    const double ulpAtMax = values[mc] - values[mc - 1];
    values.push_back(values[mc] + ulpAtMax);  // code mc+1: overflow
  }
  uint32_t operator()(float x) const {
    const uint32_t signBit = std::signbit(x) ? (1u << (f.width - 1)) : 0u;
    const double ax = std::fabs(double(x));
    const uint32_t mc = maxCode(f);
    uint32_t code;
    if (ax >= values[mc + 1]) {
      code = mc + 1;
    } else {
      const auto it = std::upper_bound(values.begin(), values.end(), ax);
      const uint32_t hi = uint32_t(it - values.begin());  // values[hi] > ax >= values[hi-1]
      const uint32_t lo = hi - 1;
      const double mid = (values[lo] + values[hi]) / 2;  // exact
      if (ax < mid) code = lo;
      else if (ax > mid) code = hi;
      else code = (lo % 2 == 0) ? lo : hi;
    }
    if (code > mc) code = f.ieee ? (((1u << f.exp) - 1) << f.mant) : ((1u << (f.width - 1)) - 1);
    return signBit | code;
  }
};

// Floats worth narrowing: a stride through all patterns, every representable
// value, every midpoint between neighbours and the floats either side of it.
std::vector<float> interestingFloats(const Format& f) {
  std::vector<float> out;
  for (uint64_t bits = 0; bits < (1ull << 32); bits += 65521) out.push_back(bitCast<float>(uint32_t(bits)));
  RefNarrow ref(f);
  for (size_t c = 0; c + 1 < ref.values.size(); ++c) {
    const float v = float(ref.values[c]);
    const float mid = float((ref.values[c] + ref.values[c + 1]) / 2);
    for (float x : {v, mid, std::nextafter(mid, 0.0f), std::nextafter(mid, INFINITY)}) {
      out.push_back(x);
      out.push_back(-x);
    }
  }
  for (float x : {INFINITY, -INFINITY, NAN, -NAN, 0.0f, -0.0f, FLT_MAX, -FLT_MAX, FLT_MIN,
                  std::numeric_limits<float>::denorm_min()})
    out.push_back(x);
  return out;
}

}  // namespace

TEST_CASE("every small-float bit pattern widens exactly and round-trips", "[kernels][conv]") {
  for (const Format& f : kFormats) {
    INFO("format " << f.name);
    size_t checked = 0, nans = 0;
    for (uint32_t v = 0; v < (1u << f.width); ++v) {
      const float w = f.widen(v);
      const bool neg = (v >> (f.width - 1)) & 1;
      if (isNaNCode(f, v)) {
        ++nans;
        if (!std::isnan(w) || std::signbit(w) != neg) FAIL_CHECK("NaN code " << v << " widened to " << w);
        const uint32_t back = f.narrow(w);
        // NaN stays NaN with its sign, made quiet (e4m3 has a single NaN).
        if (!isNaNCode(f, back) || ((back >> (f.width - 1)) & 1) != uint32_t(neg))
          FAIL_CHECK("NaN code " << v << " came back as " << back);
        const uint32_t quietBit = f.ieee ? (1u << (f.mant - 1)) : 0u;
        if (back != (v | quietBit)) FAIL_CHECK("NaN code " << v << " payload not kept: " << back);
        continue;
      }
      if (isInfCode(f, v)) {
        if (!std::isinf(w) || std::signbit(w) != neg) FAIL_CHECK("inf code " << v << " widened to " << w);
      } else {
        const double want = valueOf(f, v);
        if (double(w) != want || std::signbit(w) != neg)
          FAIL_CHECK("code " << v << " widened to " << w << ", want " << want);
      }
      if (f.narrow(w) != v) FAIL_CHECK("code " << v << " round-tripped to " << f.narrow(w));
      ++checked;
    }
    CHECK(checked + nans == (1u << f.width));
    CHECK(nans == (f.ieee ? 2u * ((1u << f.mant) - 1u) : 2u));
  }
}

TEST_CASE("round to nearest even: hand-computed cases", "[kernels][conv]") {
  // fp16: 1 ulp at 1.0 is 2^-10; the smallest subnormal 2^-24; max 65504.
  CHECK(ck::floatToHalf(1.0f + 0x1p-11f) == 0x3c00);             // tie -> even (down)
  CHECK(ck::floatToHalf(1.0f + 3 * 0x1p-11f) == 0x3c02);         // tie -> even (up)
  CHECK(ck::floatToHalf(1.0f + 0x1p-11f + 0x1p-20f) == 0x3c01);  // just above the tie
  CHECK(ck::floatToHalf(1.0f + 0x1p-11f - 0x1p-23f) == 0x3c00);  // just below the tie
  CHECK(ck::floatToHalf(65504.0f) == 0x7bff);
  CHECK(ck::floatToHalf(65519.0f) == 0x7bff);
  CHECK(ck::floatToHalf(65520.0f) == 0x7c00);  // tie with the (odd) max: rounds to inf
  CHECK(ck::floatToHalf(-65520.0f) == 0xfc00);
  CHECK(ck::floatToHalf(FLT_MAX) == 0x7c00);
  CHECK(ck::floatToHalf(INFINITY) == 0x7c00);
  CHECK(ck::floatToHalf(0x1p-24f) == 0x0001);
  CHECK(ck::floatToHalf(0x1p-25f) == 0x0000);         // tie between 0 and 1 unit -> 0
  CHECK(ck::floatToHalf(-0x1p-25f) == 0x8000);        // keeps the sign
  CHECK(ck::floatToHalf(1.5f * 0x1p-25f) == 0x0001);  // above the tie
  CHECK(ck::floatToHalf(3 * 0x1p-25f) == 0x0002);     // 1.5 units -> 2
  CHECK(ck::floatToHalf(5 * 0x1p-25f) == 0x0002);     // 2.5 units -> 2
  CHECK(ck::floatToHalf(0x1p-14f - 0x1p-25f) == 0x0400);  // 1023.5 units -> min normal
  CHECK(ck::floatToHalf(0x1p-14f) == 0x0400);
  CHECK(ck::floatToHalf(-0.0f) == 0x8000);
  CHECK(ck::floatToHalf(std::numeric_limits<float>::denorm_min()) == 0x0000);
  CHECK(ck::floatToHalf(bitCast<float>(0x7f800001u)) == 0x7e00);  // sNaN -> quiet NaN
  CHECK(ck::floatToHalf(bitCast<float>(0xffc02000u)) == 0xfe01);  // sign and top payload kept

  // bf16: 1 ulp at 1.0 is 2^-7.
  CHECK(ck::floatToBf16(bitCast<float>(0x3f808000u)) == 0x3f80);  // tie -> even
  CHECK(ck::floatToBf16(bitCast<float>(0x3f818000u)) == 0x3f82);  // tie -> even (up)
  CHECK(ck::floatToBf16(bitCast<float>(0x3f808001u)) == 0x3f81);
  CHECK(ck::floatToBf16(bitCast<float>(0x00008000u)) == 0x0000);  // subnormal tie
  CHECK(ck::floatToBf16(bitCast<float>(0x00018000u)) == 0x0002);
  CHECK(ck::floatToBf16(bitCast<float>(0x00007fffu)) == 0x0000);
  CHECK(ck::floatToBf16(bitCast<float>(0x007fffffu)) == 0x0080);  // rounds up to min normal
  CHECK(ck::floatToBf16(bitCast<float>(0x7f7f7fffu)) == 0x7f7f);
  CHECK(ck::floatToBf16(bitCast<float>(0x7f7f8000u)) == 0x7f80);  // tie with odd max -> inf
  CHECK(ck::floatToBf16(bitCast<float>(0xff7fffffu)) == 0xff80);
  CHECK(ck::floatToBf16(bitCast<float>(0x7f800001u)) == 0x7fc0);

  // e4m3 (OCP e4m3fn): max 448, no inf, NaN 0x7f/0xff, subnormal unit 2^-9.
  CHECK(ck::floatToE4M3(448.0f) == 0x7e);
  CHECK(ck::floatToE4M3(464.0f) == 0x7e);  // tie with the (even) max: stays finite
  CHECK(ck::floatToE4M3(465.0f) == 0x7f);  // overflow -> NaN
  CHECK(ck::floatToE4M3(-480.0f) == 0xff);
  CHECK(ck::floatToE4M3(INFINITY) == 0x7f);
  CHECK(ck::floatToE4M3(-INFINITY) == 0xff);
  CHECK(ck::floatToE4M3(240.0f) == 0x77);
  CHECK(ck::floatToE4M3(256.0f) == 0x78);
  CHECK(ck::floatToE4M3(0x1p-9f) == 0x01);
  CHECK(ck::floatToE4M3(0x1p-10f) == 0x00);          // tie -> 0
  CHECK(ck::floatToE4M3(1.5f * 0x1p-10f) == 0x01);
  CHECK(ck::floatToE4M3(3 * 0x1p-10f) == 0x02);      // 1.5 units -> 2
  CHECK(ck::floatToE4M3(0x1p-6f - 0x1p-10f) == 0x08);  // 7.5 units -> 8 = min normal
  CHECK(ck::floatToE4M3(1.0f + 1.0f / 16) == 0x38);  // tie -> even (down)
  CHECK(ck::floatToE4M3(1.0f + 3.0f / 16) == 0x3a);  // tie -> even (up)
  CHECK(ck::floatToE4M3(-0.0f) == 0x80);
  CHECK(ck::floatToE4M3(NAN) == 0x7f);

  // e5m2: max 57344, inf 0x7c, subnormal unit 2^-16.
  CHECK(ck::floatToE5M2(57344.0f) == 0x7b);
  CHECK(ck::floatToE5M2(61439.0f) == 0x7b);
  CHECK(ck::floatToE5M2(61440.0f) == 0x7c);  // tie with the (odd) max -> inf
  CHECK(ck::floatToE5M2(0x1p-16f) == 0x01);
  CHECK(ck::floatToE5M2(0x1p-17f) == 0x00);
  CHECK(ck::floatToE5M2(3 * 0x1p-17f) == 0x02);
  CHECK(ck::floatToE5M2(1.0f + 1.0f / 8) == 0x3c);
  CHECK(ck::floatToE5M2(1.0f + 3.0f / 8) == 0x3e);
  CHECK(ck::floatToE5M2(-INFINITY) == 0xfc);
  CHECK(ck::floatToE5M2(bitCast<float>(0x7f800001u)) == 0x7e);
}

TEST_CASE("narrowing matches an independent nearest-value search", "[kernels][conv]") {
  for (const Format& f : kFormats) {
    INFO("format " << f.name);
    RefNarrow ref(f);
    size_t bad = 0, checked = 0;
    for (float x : interestingFloats(f)) {
      const uint32_t got = f.narrow(x);
      if (std::isnan(x)) {
        if (!isNaNCode(f, got)) ++bad;
        continue;
      }
      const uint32_t want = ref(x);
      ++checked;
      if (got != want) {
        if (bad < 5) FAIL_CHECK("x=" << x << " (0x" << std::hex << bitCast<uint32_t>(x) << ") got 0x" << got
                                     << " want 0x" << want << std::dec);
        ++bad;
      }
    }
    CHECK(checked > 60000);
    CHECK(bad == 0);
  }
}
