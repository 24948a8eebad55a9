// kernels_test.cc — reduce() against an independent reference, on every ISA
// this machine has, for every dtype x op x {plain, pre, post, pre+post,
// a == nullptr}, many sizes, misaligned pointers and aliasing.
#include <catch2/catch.hpp>

#include <cstdio>
#include <cstdlib>
#include <memory>
#include <sstream>
#include <vector>

#include "coll/kernels/reduce.h"
#include "kernel_test_util.h"
#include "test_scale.h"

namespace ck = coll::kernels;
using ktest::RefParams;

namespace {

struct Mode {
  const char* name;
  bool hasA, pre, post;
};
const Mode kModes[] = {
    {"plain", true, false, false},     {"pre", true, true, false},
    {"post", true, false, true},       {"pre+post", true, true, true},
    {"a=null", false, false, false},   {"a=null+pre", false, true, false},
    {"a=null+post", false, false, true}, {"a=null+pre+post", false, true, true},
};

const size_t kSizes[] = {0, 1, 2, 3, 7, 15, 16, 17, 31, 63, 64, 65, 1000, 4099};

// Restores the best ISA when a test leaves.
struct IsaGuard {
  std::string saved = ck::activeIsa();
  ~IsaGuard() { ck::setIsa(saved.c_str()); }
};

// 64-byte aligned buffer.
struct Buffer {
  std::unique_ptr<unsigned char, decltype(&std::free)> mem{nullptr, &std::free};
  size_t size = 0;
  explicit Buffer(size_t bytes) : size((bytes + 63) / 64 * 64) {
    mem.reset(static_cast<unsigned char*>(std::aligned_alloc(64, size)));
  }
  unsigned char* data() { return mem.get(); }
};

ck::ReduceFn makeFn(ck::DType t, ck::Op op, bool pre, bool post, std::mt19937_64& rng) {
  ck::ReduceFn fn;
  fn.dtype = t;
  fn.op = op;
  fn.premul = pre;
  if (ktest::isFloatType(t)) {
    static const double kScalars[] = {0.5, -1.5, 3.0, 0.1, 1e-3, -2.75, 1e10, 1e-30, 1.0 / 3.0, 255.0};
    fn.scalar.f = kScalars[rng() % (sizeof kScalars / sizeof kScalars[0])];
    static const uint64_t kDiv[] = {2, 3, 7, 8, 1000, 1ull << 40, 5};
    fn.divisor = post ? kDiv[rng() % (sizeof kDiv / sizeof kDiv[0])] : 0;
  } else {
    static const int64_t kScalars[] = {3, -1, 0x7fffffff, INT64_MIN, 12345678901ll, -7, 255, 2};
    fn.scalar.i = kScalars[rng() % (sizeof kScalars / sizeof kScalars[0])];
    static const uint64_t kDiv[] = {1, 2, 3, 7, 8, 1000, 1ull << 40, ~0ull, 1ull << 63, 5};
    fn.divisor = post ? kDiv[rng() % (sizeof kDiv / sizeof kDiv[0])] : 0;
  }
  return fn;
}

RefParams paramsOf(const ck::ReduceFn& fn, const Mode& m) {
  RefParams p;
  p.op = fn.op;
  p.hasA = m.hasA;
  p.pre = m.pre;
  p.post = m.post;
  p.scalar = fn.scalar;
  p.divisor = fn.divisor;
  return p;
}

std::string hex(const unsigned char* p, size_t bytes) {
  std::string s = "0x";
  char buf[4];
  for (size_t i = bytes; i-- > 0;) {
    snprintf(buf, sizeof buf, "%02x", p[i]);
    s += buf;
  }
  return s;
}

// Index of the first differing element, or -1.
long firstMismatch(const unsigned char* got, const unsigned char* want, size_t n, size_t esz) {
  for (size_t i = 0; i < n; ++i)
    if (std::memcmp(got + i * esz, want + i * esz, esz) != 0) return long(i);
  return -1;
}

}  // namespace

TEST_CASE("reduce matches the reference: all dtypes, ops, modes, sizes, layouts, ISAs",
          "[kernels][reduce]") {
  IsaGuard guard;
  const auto isas = ktest::availableIsas();
  REQUIRE(!isas.empty());
  REQUIRE(isas.front() == "scalar");
  std::mt19937_64 rng(20240601);
  constexpr size_t kMaxN = 4099 + 8;
  const size_t kBufBytes = 64 + (kMaxN + 8) * 8 + 64;
  Buffer bufD(kBufBytes), bufA(kBufBytes), bufB(kBufBytes);
  std::vector<unsigned char> inA(kMaxN * 8), inB(kMaxN * 8), want(kMaxN * 8), snapshot(bufD.size);
  struct Layout { size_t d, a, b; };
  const Layout kLayouts[] = {{0, 0, 0}, {1, 1, 1}, {1, 0, 3}};
  enum Alias { kNone, kDstIsA, kDstIsB };
  size_t configs = 0;

  for (int ti = 0; ti < ck::kNumDTypes; ++ti) {
    const auto t = static_cast<ck::DType>(ti);
    const size_t esz = ck::dtypeSize(t);
    for (int oi = 0; oi < ck::kNumOps; ++oi) {
      const auto op = static_cast<ck::Op>(oi);
      for (const Mode& mode : kModes) {
        if (!mode.hasA && oi != 0) continue;  // the op does not matter without a
        for (size_t n : kSizes) {
          const ck::ReduceFn fn = makeFn(t, op, mode.pre, mode.post, rng);
          ktest::fillRandom(t, inA.data(), n, rng);
          ktest::fillRandom(t, inB.data(), n, rng);
          const RefParams p = paramsOf(fn, mode);
          for (size_t i = 0; i < n; ++i)
            ktest::referenceElement(t, p, inA.data() + i * esz, inB.data() + i * esz, want.data() + i * esz);

          for (const auto& isa : isas) {
            REQUIRE(ck::setIsa(isa.c_str()));
            REQUIRE(std::string(ck::activeIsa()) == isa);
            for (const Layout& lay : kLayouts) {
              for (Alias alias : {kNone, kDstIsA, kDstIsB}) {
                if (alias == kDstIsA && !mode.hasA) continue;
                ++configs;
                std::memset(bufD.data(), 0xa5, bufD.size);
                std::memset(bufA.data(), 0x5a, bufA.size);
                std::memset(bufB.data(), 0x3c, bufB.size);
                unsigned char* pa = bufA.data() + 64 + lay.a * esz;
                unsigned char* pb = bufB.data() + 64 + lay.b * esz;
                unsigned char* pd = bufD.data() + 64 + lay.d * esz;
                Buffer* dstBuf = &bufD;
                if (alias == kDstIsA) { pd = pa; dstBuf = &bufA; }
                if (alias == kDstIsB) { pd = pb; dstBuf = &bufB; }
                std::memcpy(pa, inA.data(), n * esz);
                std::memcpy(pb, inB.data(), n * esz);
                std::memcpy(snapshot.data(), dstBuf->data(), dstBuf->size);

                ck::reduce(fn, pd, mode.hasA ? pa : nullptr, pb, n, mode.pre, mode.post);

                const long bad = firstMismatch(pd, want.data(), n, esz);
                if (bad >= 0) {
                  const size_t i = size_t(bad);
                  INFO("isa=" << isa << " dtype=" << ck::dtypeName(t) << " op=" << ck::opName(op)
                              << " mode=" << mode.name << " n=" << n << " layout=" << lay.d << lay.a
                              << lay.b << " alias=" << int(alias) << " index=" << i << " a="
                              << hex(inA.data() + i * esz, esz) << " b=" << hex(inB.data() + i * esz, esz)
                              << " scalar=" << fn.scalar.u << " divisor=" << fn.divisor
                              << " want=" << hex(want.data() + i * esz, esz)
                              << " got=" << hex(pd + i * esz, esz));
                  CHECK(bad == -1);
                  return;  // one detailed failure is enough
                }
                // Nothing outside [pd, pd + n) of the destination buffer moved,
                // and a non-aliased input is untouched.
                const size_t off = size_t(pd - dstBuf->data());
                bool outside = std::memcmp(dstBuf->data(), snapshot.data(), off) == 0 &&
                               std::memcmp(dstBuf->data() + off + n * esz, snapshot.data() + off + n * esz,
                                           dstBuf->size - off - n * esz) == 0;
                if (alias != kDstIsB) outside = outside && std::memcmp(pb, inB.data(), n * esz) == 0;
                if (alias != kDstIsA && mode.hasA)
                  outside = outside && std::memcmp(pa, inA.data(), n * esz) == 0;
                if (!outside) {
                  INFO("isa=" << isa << " dtype=" << ck::dtypeName(t) << " op=" << ck::opName(op)
                              << " mode=" << mode.name << " n=" << n << " alias=" << int(alias));
                  CHECK(outside);
                  return;
                }
              }
            }
          }
        }
      }
    }
  }
  printf("reduce reference test: %zu configurations checked\n", configs);
  CHECK(configs > 10000);
}

TEST_CASE("every ISA is bit-identical to scalar on large random inputs", "[kernels][reduce]") {
  IsaGuard guard;
  const auto isas = ktest::availableIsas();
  std::mt19937_64 rng(777);
  const size_t n = 40013;
  std::vector<unsigned char> a(n * 8), b(n * 8), want(n * 8), got(n * 8), ref(n * 8);
  for (int ti = 0; ti < ck::kNumDTypes; ++ti) {
    const auto t = static_cast<ck::DType>(ti);
    const size_t esz = ck::dtypeSize(t);
    for (int oi = 0; oi < ck::kNumOps; ++oi) {
      const auto op = static_cast<ck::Op>(oi);
      for (const Mode& mode : kModes) {
        if (!mode.hasA && oi != 0) continue;
        const ck::ReduceFn fn = makeFn(t, op, mode.pre, mode.post, rng);
        ktest::fillRandom(t, a.data(), n, rng);
        ktest::fillRandom(t, b.data(), n, rng);
        REQUIRE(ck::setIsa("scalar"));
        ck::reduce(fn, want.data(), mode.hasA ? a.data() : nullptr, b.data(), n, mode.pre, mode.post);
        // Scalar against the reference.
        const RefParams p = paramsOf(fn, mode);
        for (size_t i = 0; i < n; ++i)
          ktest::referenceElement(t, p, a.data() + i * esz, b.data() + i * esz, ref.data() + i * esz);
        long bad = firstMismatch(want.data(), ref.data(), n, esz);
        INFO("dtype=" << ck::dtypeName(t) << " op=" << ck::opName(op) << " mode=" << mode.name
                      << " index=" << bad);
        CHECK(bad == -1);
        for (const auto& isa : isas) {
          REQUIRE(ck::setIsa(isa.c_str()));
          std::memset(got.data(), 0, got.size());
          ck::reduce(fn, got.data(), mode.hasA ? a.data() : nullptr, b.data(), n, mode.pre, mode.post);
          bad = firstMismatch(got.data(), want.data(), n, esz);
          INFO("isa=" << isa << " index=" << bad
                      << (bad >= 0 ? " a=" + hex(a.data() + size_t(bad) * esz, esz) + " b=" +
                                         hex(b.data() + size_t(bad) * esz, esz) + " want=" +
                                         hex(want.data() + size_t(bad) * esz, esz) + " got=" +
                                         hex(got.data() + size_t(bad) * esz, esz)
                                   : std::string()));
          CHECK(bad == -1);
        }
      }
    }
  }
}

TEST_CASE("pre/post apply only when requested and configured", "[kernels][reduce]") {
  IsaGuard guard;
  for (const auto& isa : ktest::availableIsas()) {
    REQUIRE(ck::setIsa(isa.c_str()));
    const float a[5] = {1, 2, 3, 4, 5}, b[5] = {10, 20, 30, 40, 50};
    float d[5];
    ck::ReduceFn fn;
    fn.dtype = ck::DType::Float32;
    fn.premul = true;
    fn.scalar.f = 2.0;
    fn.divisor = 4;
    ck::reduce(fn, d, a, b, 5, false, false);
    CHECK(d[4] == 55.0f);
    ck::reduce(fn, d, a, b, 5, true, false);
    CHECK(d[4] == 105.0f);
    ck::reduce(fn, d, a, b, 5, false, true);
    CHECK(d[4] == 13.75f);
    ck::reduce(fn, d, a, b, 5, true, true);
    CHECK(d[4] == 26.25f);
    fn.premul = false;
    fn.divisor = 0;
    ck::reduce(fn, d, a, b, 5, true, true);
    CHECK(d[4] == 55.0f);
  }
}

TEST_CASE("hand-checked values", "[kernels][reduce]") {
  IsaGuard guard;
  for (const auto& isa : ktest::availableIsas()) {
    INFO("isa=" << isa);
    REQUIRE(ck::setIsa(isa.c_str()));
    ck::ReduceFn fn;

    SECTION("integer wrap-around, truncating average, wrapping pre-multiply") {
      const int8_t a[3] = {127, -128, -7}, b[3] = {1, -1, 0};
      int8_t d[3];
      fn.dtype = ck::DType::Int8;
      ck::reduce(fn, d, a, b, 3, false, false);
      CHECK(d[0] == -128);
      CHECK(d[1] == 127);
      fn.divisor = 2;
      ck::reduce(fn, d, a, b, 3, false, true);
      CHECK(d[2] == -3);  // -7 / 2 truncates toward zero
      fn.divisor = 0;
      const uint8_t ua[1] = {16}, ub[1] = {16};
      uint8_t ud[1];
      fn.dtype = ck::DType::Uint8;
      fn.op = ck::Op::Prod;
      ck::reduce(fn, ud, ua, ub, 1, false, false);
      CHECK(ud[0] == 0);
      const int64_t la[1] = {INT64_MIN}, lb[1] = {0};
      int64_t ld[1];
      fn.dtype = ck::DType::Int64;
      fn.op = ck::Op::Sum;
      fn.divisor = 1ull << 63;
      ck::reduce(fn, ld, la, lb, 1, false, true);
      CHECK(ld[0] == -1);
      const int32_t ia[1] = {5}, ib[1] = {0x40000000};
      int32_t id[1];
      fn.dtype = ck::DType::Int32;
      fn.divisor = 0;
      fn.premul = true;
      fn.scalar.i = 4;
      ck::reduce(fn, id, ia, ib, 1, true, false);
      CHECK(id[0] == 5);  // 0x40000000 * 4 wraps to 0
    }

    SECTION("float max/min: NaN wins, -0 < +0, canonical NaN") {
      const float nan1 = ktest::bitCast<float>(0xffa00001u);  // negative signalling NaN
      const float a[6] = {nan1, 1.0f, -0.0f, 0.0f, -0.0f, 2.0f};
      const float b[6] = {1.0f, nan1, 0.0f, -0.0f, -0.0f, 2.0f};
      float d[6];
      fn.dtype = ck::DType::Float32;
      fn.op = ck::Op::Max;
      ck::reduce(fn, d, a, b, 6, false, false);
      CHECK(ktest::bitCast<uint32_t>(d[0]) == ktest::kNaN32);
      CHECK(ktest::bitCast<uint32_t>(d[1]) == ktest::kNaN32);
      CHECK(ktest::bitCast<uint32_t>(d[2]) == 0u);
      CHECK(ktest::bitCast<uint32_t>(d[3]) == 0u);
      CHECK(ktest::bitCast<uint32_t>(d[4]) == 0x80000000u);
      CHECK(d[5] == 2.0f);
      fn.op = ck::Op::Min;
      ck::reduce(fn, d, a, b, 6, false, false);
      CHECK(ktest::bitCast<uint32_t>(d[0]) == ktest::kNaN32);
      CHECK(ktest::bitCast<uint32_t>(d[2]) == 0x80000000u);
      CHECK(ktest::bitCast<uint32_t>(d[3]) == 0x80000000u);
      fn.op = ck::Op::Sum;
      ck::reduce(fn, d, a, b, 1, false, false);
      CHECK(ktest::bitCast<uint32_t>(d[0]) == ktest::kNaN32);
      const uint16_t h[1] = {0xfd01};  // negative signalling fp16 NaN
      uint16_t hd[1];
      fn.dtype = ck::DType::Float16;
      ck::reduce(fn, hd, nullptr, h, 1, false, false);
      CHECK(hd[0] == ktest::kNaNHalf);
    }

    SECTION("low precision rounds once, to nearest even") {
      // 1 + 2^-11 is halfway between fp16 1.0 and its successor: even wins.
      const uint16_t a[2] = {0x3c00, 0x3c01}, b[2] = {0x1000 /* 2^-11 */, 0x1000};
      uint16_t d[2];
      fn.dtype = ck::DType::Float16;
      ck::reduce(fn, d, a, b, 2, false, false);
      CHECK(d[0] == 0x3c00);
      CHECK(d[1] == 0x3c02);
      // avg of fp16 3 and 4 over 2 ranks: 3.5 exactly.
      const uint16_t x[1] = {0x4200}, y[1] = {0x4400};
      fn.divisor = 2;
      ck::reduce(fn, d, x, y, 1, false, true);
      CHECK(d[0] == 0x4300);
      // bf16: 1 + 2^-8 ties to 1.0.
      const uint16_t ba[1] = {0x3f80}, bb[1] = {0x3b80 /* 2^-8 */};
      fn.dtype = ck::DType::Bfloat16;
      fn.divisor = 0;
      ck::reduce(fn, d, ba, bb, 1, false, false);
      CHECK(d[0] == 0x3f80);
      // e4m3: 448 + 16 = 464 ties down to 448; 448 + 32 overflows to NaN.
      const uint8_t ea[2] = {0x7e, 0x7e}, eb[2] = {0x58 /* 16 */, 0x60 /* 32 */};
      uint8_t ed[2];
      fn.dtype = ck::DType::Fp8E4M3;
      ck::reduce(fn, ed, ea, eb, 2, false, false);
      CHECK(ed[0] == 0x7e);
      CHECK(ed[1] == 0x7f);
      // e5m2: 57344 + 8192 overflows to inf; -57344 - 4096 ties to -inf.
      const uint8_t fa[2] = {0x7b, 0xfb}, fb[2] = {0x70 /* 8192 */, 0xec /* -4096 */};
      fn.dtype = ck::DType::Fp8E5M2;
      ck::reduce(fn, ed, fa, fb, 2, false, false);
      CHECK(ed[0] == 0x7c);
      CHECK(ed[1] == 0xfc);
    }
  }
}

TEST_CASE("large outputs (non-temporal store path) match scalar", "[kernels][reduce]") {
  IsaGuard guard;
  std::mt19937_64 rng(4242);
  const std::vector<ck::DType> all = {ck::DType::Float32, ck::DType::Float64, ck::DType::Bfloat16,
                                      ck::DType::Float16, ck::DType::Int8,    ck::DType::Fp8E4M3,
                                      ck::DType::Int64,   ck::DType::Fp8E5M2};
  // A sanitizer build (test_scale.h) takes one type per element size: the
  // store path and its tails depend on the size; the other types' values
  // are checked at smaller sizes above.  It also leaves out pre+post, whose
  // loop reads and stores like plain's.
  const std::vector<ck::DType> types =
      coll::testing::kSanitizedBuild
          ? std::vector<ck::DType>{ck::DType::Float32, ck::DType::Float64, ck::DType::Bfloat16, ck::DType::Int8}
          : all;
  const std::vector<Mode> modes = coll::testing::kSanitizedBuild ? std::vector<Mode>{kModes[0], kModes[4]}
                                                                  : std::vector<Mode>{kModes[0], kModes[3], kModes[4]};
  for (ck::DType t : types) {
    const size_t esz = ck::dtypeSize(t);
    const size_t n = (size_t(9) << 20) / esz + 37;  // > 8 MiB of output, odd length
    std::vector<unsigned char> a((n + 1) * esz), b((n + 1) * esz), want((n + 1) * esz), got((n + 1) * esz);
    ktest::fillRandom(t, a.data(), n + 1, rng);
    ktest::fillRandom(t, b.data(), n + 1, rng);
    for (const Mode& mode : modes) {
      const ck::ReduceFn fn = makeFn(t, ck::Op::Sum, mode.pre, mode.post, rng);
      for (size_t off : {size_t(0), size_t(1)}) {
        REQUIRE(ck::setIsa("scalar"));
        ck::reduce(fn, want.data() + off * esz, mode.hasA ? a.data() + off * esz : nullptr,
                   b.data() + off * esz, n, mode.pre, mode.post);
        for (const auto& isa : ktest::availableIsas()) {
          REQUIRE(ck::setIsa(isa.c_str()));
          // dst aliases a (or b when there is no a).
          got = mode.hasA ? a : b;
          unsigned char* pd = got.data() + off * esz;
          ck::reduce(fn, pd, mode.hasA ? pd : nullptr, mode.hasA ? b.data() + off * esz : pd, n, mode.pre,
                     mode.post);
          const long bad = firstMismatch(pd, want.data() + off * esz, n, esz);
          INFO("isa=" << isa << " dtype=" << ck::dtypeName(t) << " mode=" << mode.name << " off=" << off
                      << " index=" << bad);
          CHECK(bad == -1);
        }
      }
    }
  }
}
