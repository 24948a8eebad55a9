// isa_test.cc — dispatch (setIsa / activeIsa / COLL_KERNELS_ISA) and each
// ISA's vector conversions against the scalar reference.
#include <catch2/catch.hpp>

#include <cfloat>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include <unistd.h>

#include "coll/kernels/reduce.h"
#include "internal.h"
#include "kernel_test_util.h"

namespace ck = coll::kernels;
using ktest::bitCast;

namespace {

const ck::DType kSmallTypes[] = {ck::DType::Float32, ck::DType::Float16, ck::DType::Bfloat16,
                                 ck::DType::Fp8E4M3, ck::DType::Fp8E5M2};

// Floats exercising every rounding path of every small type: a stride
// through all patterns, every value of each type, and the midpoints between
// neighbouring values with the floats either side.
std::vector<float> conversionInputs() {
  std::vector<float> out;
  for (uint64_t bits = 0; bits < (1ull << 32); bits += 9973) out.push_back(bitCast<float>(uint32_t(bits)));
  const ck::detail::IsaImpl* scalar = ck::detail::findIsa("scalar");
  for (ck::DType t : {ck::DType::Float16, ck::DType::Bfloat16, ck::DType::Fp8E4M3, ck::DType::Fp8E5M2}) {
    const size_t count = size_t(1) << (8 * ck::dtypeSize(t));
    std::vector<uint16_t> codes(count);
    std::vector<uint8_t> codes8(count);
    for (size_t c = 0; c < count; ++c) {
      codes[c] = uint16_t(c);
      codes8[c] = uint8_t(c);
    }
    std::vector<float> values(count);
    scalar->toFloat(t, ck::dtypeSize(t) == 2 ? static_cast<const void*>(codes.data()) : codes8.data(),
                    values.data(), count);
    for (size_t c = 0; c + 1 < count; ++c) {
      if (!std::isfinite(values[c]) || !std::isfinite(values[c + 1])) continue;
      const float mid = float((double(values[c]) + double(values[c + 1])) / 2);
      for (float x : {values[c], mid, std::nextafter(mid, -INFINITY), std::nextafter(mid, INFINITY)})
        out.push_back(x);
    }
  }
  for (float x : {INFINITY, -INFINITY, NAN, -NAN, 0.0f, -0.0f, FLT_MAX, -FLT_MAX, FLT_MIN, 65520.0f,
                  464.0f, 480.0f, 61440.0f})
    out.push_back(x);
  return out;
}

}  // namespace

TEST_CASE("ISA selection", "[kernels][isa]") {
  const std::string best = ck::activeIsa();
  const auto isas = ktest::availableIsas();
  if (getenv("COLL_KERNELS_ISA") == nullptr) CHECK(best == isas.back());  // the best this CPU has
  CHECK_FALSE(ck::setIsa("bogus"));
  CHECK_FALSE(ck::setIsa(""));
  CHECK_FALSE(ck::setIsa(nullptr));
  CHECK(std::string(ck::activeIsa()) == best);
  for (const char* name : {"scalar", "avx2", "avx512"}) {
    const bool have = ck::detail::findIsa(name) != nullptr;
    CHECK(ck::setIsa(name) == have);
    if (have) CHECK(std::string(ck::activeIsa()) == name);
  }
#if defined(__x86_64__)
  CHECK(ck::detail::findIsa("avx2") != nullptr);  // every machine we build on has AVX2
#endif
  CHECK(ck::setIsa(best.c_str()));
}

TEST_CASE("probe: print the ISA chosen at start-up", "[.isa_probe]") {
  printf("ACTIVE_ISA=%s\n", ck::activeIsa());
}

TEST_CASE("COLL_KERNELS_ISA lowers the start-up choice", "[kernels][isa]") {
  const std::string best = ktest::availableIsas().back();
  // This test binary's own path (in the shell, /proc/self/exe is the shell).
  char self[4096] = {};
  const ssize_t len = readlink("/proc/self/exe", self, sizeof self - 1);
  REQUIRE(len > 0);
  const std::string exe(self, size_t(len));
  auto probe = [&exe](const std::string& value) {
    const std::string cmd = "COLL_KERNELS_ISA='" + value + "' '" + exe + "' '[.isa_probe]' 2>&1";
    FILE* p = popen(cmd.c_str(), "r");
    std::string out;
    if (p == nullptr) return out;
    char buf[512];
    while (fgets(buf, sizeof buf, p) != nullptr) out += buf;
    pclose(p);
    return out;
  };
  std::string out = probe("scalar");
  CHECK(out.find("ACTIVE_ISA=scalar") != std::string::npos);
  CHECK(out.find("coll kernels:") == std::string::npos);
  out = probe("nonsense");
  CHECK(out.find("ACTIVE_ISA=" + best) != std::string::npos);
  CHECK(out.find("COLL_KERNELS_ISA='nonsense' must be one of scalar|avx2|avx512") != std::string::npos);
  if (ck::detail::findIsa("avx512") == nullptr) {
    out = probe("avx512");
    CHECK(out.find("ACTIVE_ISA=" + best) != std::string::npos);
    CHECK(out.find("not supported") != std::string::npos);
  } else {
    out = probe("avx2");
    CHECK(out.find("ACTIVE_ISA=avx2") != std::string::npos);
  }
}

TEST_CASE("vector conversions match the scalar reference", "[kernels][isa][conv]") {
  const std::vector<float> in = conversionInputs();
  const ck::detail::IsaImpl* scalar = ck::detail::findIsa("scalar");
  for (const auto& isa : ktest::availableIsas()) {
    const ck::detail::IsaImpl* impl = ck::detail::findIsa(isa.c_str());
    REQUIRE(impl != nullptr);
    for (ck::DType t : kSmallTypes) {
      INFO("isa=" << isa << " dtype=" << ck::dtypeName(t));
      const size_t esz = ck::dtypeSize(t);
      // Narrowing, with odd lengths and offsets so heads and tails are hit.
      for (size_t off : {size_t(0), size_t(3)}) {
        const size_t n = in.size() - off;
        std::vector<unsigned char> want(n * esz), got(n * esz);
        scalar->fromFloat(t, in.data() + off, want.data(), n);
        impl->fromFloat(t, in.data() + off, got.data(), n);
        size_t bad = 0;
        for (size_t i = 0; i < n; ++i) {
          if (std::memcmp(&want[i * esz], &got[i * esz], esz) != 0) {
            if (bad < 3) FAIL_CHECK("x=0x" << std::hex << bitCast<uint32_t>(in[off + i]) << std::dec);
            ++bad;
          }
        }
        CHECK(bad == 0);
      }
      // Widening of every code (every float32 pattern in a stride).
      if (esz < 4) {
        const size_t count = size_t(1) << (8 * esz);
        std::vector<unsigned char> codes(count * esz);
        for (size_t c = 0; c < count; ++c) std::memcpy(&codes[c * esz], &c, esz);  // little-endian
        std::vector<float> want(count), got(count);
        scalar->toFloat(t, codes.data(), want.data(), count);
        impl->toFloat(t, codes.data(), got.data(), count);
        size_t bad = 0;
        for (size_t c = 0; c < count; ++c) {
          const bool same = std::isnan(want[c]) ? std::isnan(got[c])
                                                : bitCast<uint32_t>(want[c]) == bitCast<uint32_t>(got[c]);
          if (!same) ++bad;
        }
        CHECK(bad == 0);
      }
    }
  }
}

// All 2^32 floats through every ISA's narrowing; minutes, so hidden.  Run with
//   coll_kernels_test '[.exhaustive]'
TEST_CASE("vector narrowing matches scalar for every float", "[.exhaustive]") {
  const ck::detail::IsaImpl* scalar = ck::detail::findIsa("scalar");
  const size_t chunk = size_t(1) << 22;
  std::vector<float> in(chunk);
  std::vector<unsigned char> want(chunk * 4), got(chunk * 4);
  for (const auto& isa : ktest::availableIsas()) {
    if (isa == "scalar") continue;
    const ck::detail::IsaImpl* impl = ck::detail::findIsa(isa.c_str());
    for (ck::DType t : kSmallTypes) {
      const size_t esz = ck::dtypeSize(t);
      size_t bad = 0;
      for (uint64_t base = 0; base < (1ull << 32); base += chunk) {
        for (size_t i = 0; i < chunk; ++i) in[i] = bitCast<float>(uint32_t(base + i));
        scalar->fromFloat(t, in.data(), want.data(), chunk);
        impl->fromFloat(t, in.data(), got.data(), chunk);
        if (std::memcmp(want.data(), got.data(), chunk * esz) != 0) {
          for (size_t i = 0; i < chunk; ++i)
            if (std::memcmp(&want[i * esz], &got[i * esz], esz) != 0) {
              if (bad < 3) FAIL_CHECK(isa << " " << ck::dtypeName(t) << " x=0x" << std::hex << (base + i));
              ++bad;
            }
        }
      }
      INFO(isa << " " << ck::dtypeName(t));
      CHECK(bad == 0);
    }
  }
}
