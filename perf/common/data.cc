#include "common/data.h"

#include <coll/kernels/reduce.h>

#include <cinttypes>
#include <cstdio>
#include <cstring>

namespace collperf {

namespace kk = coll::kernels;

uint8_t sentinelByte(uint64_t seed) { return static_cast<uint8_t>(0xA5 ^ (mix64(seed ^ 0x5e) & 0x0F)); }
uint8_t guardByte(uint64_t seed) { return static_cast<uint8_t>(0x3C ^ (mix64(seed ^ 0x9a) & 0x03)); }

static uint64_t ceilDiv(uint64_t a, uint64_t b) { return (a + b - 1) / b; }

// A value in [0, m) from all 64 bits of h, by a multiply and a shift
// (Lemire's reduction) instead of h % m: a 64-bit division per element per
// rank was much of the checks' time.
static uint64_t below(uint64_t h, uint64_t m) {
  return static_cast<uint64_t>((static_cast<unsigned __int128>(h) * m) >> 64);
}

DataGen::DataGen(collDataType_t dtype, RedOp op, int nranks, uint64_t seed)
    : dtype_(dtype), op_(op), nranks_(nranks < 1 ? 1 : nranks), seed_(mix64(seed)) {
  const DtypeInfo& info = dtypeInfo(dtype);
  kind_ = info.kind;
  esize_ = info.size;
  limit_ = info.exactLimit;
  const uint64_t n = static_cast<uint64_t>(nranks_);
  switch (op_) {
    case RedOp::Sum:
    case RedOp::Avg:
    case RedOp::PreMulSum: {
      uint64_t limit = info.exactLimit;
      if (op_ == RedOp::PreMulSum && kind_ != NumKind::Float) limit /= 2;  // x2 pre-multiply
      group_ = n > limit ? ceilDiv(n, limit) : 1;
      uint64_t activeRanks = ceilDiv(n, group_);
      amp_ = limit / activeRanks;
      break;
    }
    case RedOp::Prod: {
      uint64_t twos = static_cast<uint64_t>(info.maxPow2);
      group_ = n > twos ? ceilDiv(n, twos) : 1;
      break;
    }
    default:
      break;
  }
}

uint64_t DataGen::hash(int rank, size_t index) const {
  return mix64(seed_ ^ (static_cast<uint64_t>(rank) << 48) ^ static_cast<uint64_t>(index));
}

bool DataGen::active(int rank, size_t index) const {
  return group_ == 1 || (static_cast<uint64_t>(rank) + index) % group_ == 0;
}

Num DataGen::value(int rank, size_t index) const {
  Num v;
  const uint64_t h = hash(rank, index);
  switch (op_) {
    case RedOp::Sum:
    case RedOp::Avg:
    case RedOp::PreMulSum: {
      if (!active(rank, index)) return v;  // zero
      if (kind_ == NumKind::Unsigned) {
        v.u = amp_ == UINT64_MAX ? h : below(h, amp_ + 1);
      } else {
        // amp_ <= 2^63 - 1 so 2*amp_ + 1 fits.
        int64_t s = static_cast<int64_t>(below(h, 2 * amp_ + 1)) - static_cast<int64_t>(amp_);
        if (kind_ == NumKind::Float) v.f = static_cast<double>(s);
        else v.i = s;
      }
      return v;
    }
    case RedOp::Prod: {
      const bool two = active(rank, index) && (h & 1);
      const bool neg = (h >> 1) & 1;
      if (kind_ == NumKind::Unsigned) {
        v.u = two ? 2 : 1;
      } else {
        int s = (two ? 2 : 1) * (neg ? -1 : 1);
        if (kind_ == NumKind::Float) v.f = s;
        else v.i = s;
      }
      return v;
    }
    case RedOp::Max:
    case RedOp::Min: {
      if (kind_ == NumKind::Float) {
        // k * 2^e: k from all the bits, e from the low 32 (a power of two
        // times an exact integer is exact: no ldexp needed).
        static constexpr double kPow2[7] = {0.125, 0.25, 0.5, 1.0, 2.0, 4.0, 8.0};
        const int64_t k = static_cast<int64_t>(below(h, 2 * limit_ + 1)) - static_cast<int64_t>(limit_);
        const uint64_t e = ((h & 0xffffffffull) * 7) >> 32;
        v.f = static_cast<double>(k) * kPow2[e];
      } else if (kind_ == NumKind::Signed) {
        const int bits = static_cast<int>(esize_ * 8);
        v.i = bits == 64 ? static_cast<int64_t>(h)
                         : static_cast<int64_t>(h << (64 - bits)) >> (64 - bits);  // sign-extend
      } else {
        v.u = esize_ == 8 ? h : h & ((uint64_t(1) << (esize_ * 8)) - 1);
      }
      return v;
    }
    case RedOp::None:
      v.u = h;  // raw bits
      return v;
  }
  return v;
}

void DataGen::storeNum(const Num& n, void* dst) const {
  if (op_ == RedOp::None || kind_ != NumKind::Float) {
    // Two's complement truncation to the element size (little endian).
    uint64_t bits = (op_ == RedOp::None || kind_ == NumKind::Unsigned) ? n.u : static_cast<uint64_t>(n.i);
    std::memcpy(dst, &bits, esize_);
    return;
  }
  switch (dtype_) {
    case collFloat16: {
      uint16_t b = kk::floatToHalf(static_cast<float>(n.f));
      std::memcpy(dst, &b, 2);
      break;
    }
    case collBfloat16: {
      uint16_t b = kk::floatToBf16(static_cast<float>(n.f));
      std::memcpy(dst, &b, 2);
      break;
    }
    case collFloat8e4m3: {
      uint8_t b = kk::floatToE4M3(static_cast<float>(n.f));
      std::memcpy(dst, &b, 1);
      break;
    }
    case collFloat8e5m2: {
      uint8_t b = kk::floatToE5M2(static_cast<float>(n.f));
      std::memcpy(dst, &b, 1);
      break;
    }
    case collFloat32: {
      float f = static_cast<float>(n.f);
      std::memcpy(dst, &f, 4);
      break;
    }
    default: {
      double d = n.f;
      std::memcpy(dst, &d, 8);
      break;
    }
  }
}

void DataGen::store(int rank, size_t index, void* dst) const { storeNum(value(rank, index), dst); }

void DataGen::fill(int rank, size_t first, size_t n, void* dst) const {
  auto* p = static_cast<uint8_t*>(dst);
  for (size_t k = 0; k < n; ++k) store(rank, first + k, p + k * esize_);
}

Num DataGen::reduceAt(size_t index) const {
  // Exact arithmetic in the value's own domain: by construction of the
  // inputs no partial result overflows it (see data.h).
  Num acc;
  for (int r = 0; r < nranks_; ++r) {
    const Num v = value(r, index);
    if (r == 0 && op_ != RedOp::PreMulSum) {
      acc = v;
      continue;
    }
    switch (kind_) {
      case NumKind::Signed:
        switch (op_) {
          case RedOp::Sum: case RedOp::Avg: acc.i += v.i; break;
          case RedOp::PreMulSum: acc.i += 2 * v.i; break;
          case RedOp::Prod: acc.i *= v.i; break;
          case RedOp::Max: if (v.i > acc.i) acc.i = v.i; break;
          case RedOp::Min: if (v.i < acc.i) acc.i = v.i; break;
          case RedOp::None: break;
        }
        break;
      case NumKind::Unsigned:
        switch (op_) {
          case RedOp::Sum: case RedOp::Avg: acc.u += v.u; break;
          case RedOp::PreMulSum: acc.u += 2 * v.u; break;
          case RedOp::Prod: acc.u *= v.u; break;
          case RedOp::Max: if (v.u > acc.u) acc.u = v.u; break;
          case RedOp::Min: if (v.u < acc.u) acc.u = v.u; break;
          case RedOp::None: break;
        }
        break;
      case NumKind::Float:
        switch (op_) {
          case RedOp::Sum: case RedOp::Avg: acc.f += v.f; break;
          case RedOp::PreMulSum: acc.f += 0.5 * v.f; break;
          case RedOp::Prod: acc.f *= v.f; break;
          case RedOp::Max: if (v.f > acc.f) acc.f = v.f; break;
          case RedOp::Min: if (v.f < acc.f) acc.f = v.f; break;
          case RedOp::None: break;
        }
        break;
    }
  }
  return acc;
}

void DataGen::expectReduced(size_t index, void* dst) const {
  Num acc = reduceAt(index);
  if (op_ != RedOp::Avg) {
    storeNum(acc, dst);
    return;
  }
  const int64_t n = nranks_;
  switch (kind_) {
    case NumKind::Signed:
      acc.i = acc.i / n;  // C++ truncates toward zero, as the library does
      storeNum(acc, dst);
      return;
    case NumKind::Unsigned:
      acc.u = acc.u / static_cast<uint64_t>(n);
      storeNum(acc, dst);
      return;
    case NumKind::Float:
      break;
  }
  if (dtype_ == collFloat64) {
    acc.f = acc.f / static_cast<double>(n);
    storeNum(acc, dst);
    return;
  }
  // float and the narrow types: the (exact) sum widened to float, divided in
  // float, then rounded once to the type.
  const float q = static_cast<float>(acc.f) / static_cast<float>(n);
  switch (dtype_) {
    case collFloat32: std::memcpy(dst, &q, 4); break;
    case collFloat16: { uint16_t b = kk::floatToHalf(q); std::memcpy(dst, &b, 2); break; }
    case collBfloat16: { uint16_t b = kk::floatToBf16(q); std::memcpy(dst, &b, 2); break; }
    case collFloat8e4m3: { uint8_t b = kk::floatToE4M3(q); std::memcpy(dst, &b, 1); break; }
    case collFloat8e5m2: { uint8_t b = kk::floatToE5M2(q); std::memcpy(dst, &b, 1); break; }
    default: break;
  }
}

void DataGen::premulScalar(void* dst8) const {
  Num s;
  s.i = 2;
  s.u = 2;
  s.f = 0.5;
  std::memset(dst8, 0, 8);
  // storeNum only looks at op_ for None; a PreMulSum generator stores typed.
  storeNum(s, dst8);
}

void storeSmallInt(collDataType_t dtype, int v, void* dst) {
  DataGen g(dtype, RedOp::Sum, 1, 0);
  Num n;
  n.i = v;
  n.u = static_cast<uint64_t>(v);
  n.f = v;
  g.storeNum(n, dst);
}

void fillSmallInt(collDataType_t dtype, int v, size_t n, void* dst) {
  const size_t es = dtypeBytes(dtype);
  uint8_t one[8];
  storeSmallInt(dtype, v, one);
  auto* p = static_cast<uint8_t*>(dst);
  for (size_t k = 0; k < n; ++k) std::memcpy(p + k * es, one, es);
}

bool sameElem(const void* a, const void* b, size_t esize) {
  switch (esize) {
    case 1: return *static_cast<const uint8_t*>(a) == *static_cast<const uint8_t*>(b);
    case 2: { uint16_t x, y; std::memcpy(&x, a, 2); std::memcpy(&y, b, 2); return x == y; }
    case 4: { uint32_t x, y; std::memcpy(&x, a, 4); std::memcpy(&y, b, 4); return x == y; }
    case 8: { uint64_t x, y; std::memcpy(&x, a, 8); std::memcpy(&y, b, 8); return x == y; }
    default: return std::memcmp(a, b, esize) == 0;
  }
}

std::string formatElem(collDataType_t dtype, const void* p) {
  const DtypeInfo& info = dtypeInfo(dtype);
  uint64_t bits = 0;
  std::memcpy(&bits, p, info.size);
  char buf[96];
  int w = static_cast<int>(info.size * 2);
  switch (dtype) {
    case collInt8: std::snprintf(buf, sizeof buf, "0x%0*" PRIx64 " (%d)", w, bits, int(int8_t(bits))); break;
    case collInt32: std::snprintf(buf, sizeof buf, "0x%0*" PRIx64 " (%d)", w, bits, int32_t(uint32_t(bits))); break;
    case collInt64: std::snprintf(buf, sizeof buf, "0x%0*" PRIx64 " (%" PRId64 ")", w, bits, int64_t(bits)); break;
    case collUint8:
    case collUint32:
    case collUint64: std::snprintf(buf, sizeof buf, "0x%0*" PRIx64 " (%" PRIu64 ")", w, bits, bits); break;
    case collFloat16: std::snprintf(buf, sizeof buf, "0x%0*" PRIx64 " (%.9g)", w, bits, double(kk::halfToFloat(uint16_t(bits)))); break;
    case collBfloat16: std::snprintf(buf, sizeof buf, "0x%0*" PRIx64 " (%.9g)", w, bits, double(kk::bf16ToFloat(uint16_t(bits)))); break;
    case collFloat8e4m3: std::snprintf(buf, sizeof buf, "0x%0*" PRIx64 " (%.9g)", w, bits, double(kk::e4m3ToFloat(uint8_t(bits)))); break;
    case collFloat8e5m2: std::snprintf(buf, sizeof buf, "0x%0*" PRIx64 " (%.9g)", w, bits, double(kk::e5m2ToFloat(uint8_t(bits)))); break;
    case collFloat32: { float f; std::memcpy(&f, p, 4); std::snprintf(buf, sizeof buf, "0x%0*" PRIx64 " (%.9g)", w, bits, double(f)); break; }
    case collFloat64: { double d; std::memcpy(&d, p, 8); std::snprintf(buf, sizeof buf, "0x%0*" PRIx64 " (%.17g)", w, bits, d); break; }
    default: std::snprintf(buf, sizeof buf, "0x%" PRIx64, bits); break;
  }
  return buf;
}

}  // namespace collperf
