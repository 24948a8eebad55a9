#include "common/data.h"

#include <coll/kernels/reduce.h>

#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <type_traits>

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
// A value in [-a, a] from h (a <= 2^63 - 1, so 2a + 1 fits).  The shift
// down by a is done in uint64_t: in int64_t it overflowed where a = 2^63 - 1
// (one rank's int64 sum takes the whole range) and the draw was >= 2^63.
static int64_t symmetric(uint64_t h, uint64_t a) { return static_cast<int64_t>(below(h, 2 * a + 1) - a); }

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

// The per-(op, kind) loops.  Values live in their exact domain as Acc<K>:
// int64_t for signed types, uint64_t for unsigned, double for every
// floating type (see data.h for why each is exact).
struct DataLoops {
  template <NumKind K>
  using Acc = std::conditional_t<K == NumKind::Signed, int64_t,
                                 std::conditional_t<K == NumKind::Unsigned, uint64_t, double>>;

  static uint64_t hash(const DataGen& g, int rank, size_t index) {
    return mix64(g.seed_ ^ (static_cast<uint64_t>(rank) << 48) ^ static_cast<uint64_t>(index));
  }
  static bool active(const DataGen& g, int rank, size_t index) {
    return g.group_ == 1 || (static_cast<uint64_t>(rank) + index) % g.group_ == 0;
  }

  // The element rank `rank` holds at global index `index` (op != None).
  template <RedOp O, NumKind K>
  static Acc<K> value(const DataGen& g, int rank, size_t index) {
    const uint64_t h = hash(g, rank, index);
    if constexpr (O == RedOp::Sum || O == RedOp::Avg || O == RedOp::PreMulSum) {
      if (!active(g, rank, index)) return Acc<K>{0};
      if constexpr (K == NumKind::Unsigned) {
        return g.amp_ == UINT64_MAX ? h : below(h, g.amp_ + 1);
      } else {
        return static_cast<Acc<K>>(symmetric(h, g.amp_));
      }
    } else if constexpr (O == RedOp::Prod) {
      const bool two = active(g, rank, index) && (h & 1);
      if constexpr (K == NumKind::Unsigned) {
        return two ? 2 : 1;
      } else {
        const bool neg = (h >> 1) & 1;
        return static_cast<Acc<K>>((two ? 2 : 1) * (neg ? -1 : 1));
      }
    } else {  // Max, Min
      if constexpr (K == NumKind::Float) {
        // k * 2^e: k from all the bits, e from the low 32 (a power of two
        // times an exact integer is exact: no ldexp needed).
        static constexpr double kPow2[7] = {0.125, 0.25, 0.5, 1.0, 2.0, 4.0, 8.0};
        const int64_t k = symmetric(h, g.limit_);
        const uint64_t e = ((h & 0xffffffffull) * 7) >> 32;
        return static_cast<double>(k) * kPow2[e];
      } else if constexpr (K == NumKind::Signed) {
        const int bits = static_cast<int>(g.esize_ * 8);
        return bits == 64 ? static_cast<int64_t>(h)
                          : static_cast<int64_t>(h << (64 - bits)) >> (64 - bits);  // sign-extend
      } else {
        return g.esize_ == 8 ? h : h & ((uint64_t(1) << (g.esize_ * 8)) - 1);
      }
    }
  }

  // acc = acc op v, for every rank after the first (and the first too for
  // PreMulSum, whose accumulator starts at zero).
  template <RedOp O, NumKind K>
  static void combine(Acc<K>& acc, Acc<K> v) {
    if constexpr (O == RedOp::Sum || O == RedOp::Avg) acc += v;
    else if constexpr (O == RedOp::PreMulSum && K == NumKind::Float) acc += 0.5 * v;
    else if constexpr (O == RedOp::PreMulSum) acc += 2 * v;
    else if constexpr (O == RedOp::Prod) acc *= v;
    else if constexpr (O == RedOp::Max) acc = v > acc ? v : acc;
    else acc = v < acc ? v : acc;
  }

  // dst[0..n) = the elements for acc[0..n): integers truncated to the
  // element size (two's complement, little endian), floating values rounded
  // once to the dtype (they are exact in it except avg's quotient).
  template <NumKind K>
  static void store(const DataGen& g, const Acc<K>* acc, size_t n, void* dst) {
    if constexpr (K != NumKind::Float) {
      storeBits(g.esize_, reinterpret_cast<const uint64_t*>(acc), n, dst);
    } else {
      switch (g.dtype_) {
        case collFloat16: convert(acc, n, static_cast<uint16_t*>(dst), [](float f) { return kk::floatToHalf(f); }); break;
        case collBfloat16: convert(acc, n, static_cast<uint16_t*>(dst), [](float f) { return kk::floatToBf16(f); }); break;
        case collFloat8e4m3: convert(acc, n, static_cast<uint8_t*>(dst), [](float f) { return kk::floatToE4M3(f); }); break;
        case collFloat8e5m2: convert(acc, n, static_cast<uint8_t*>(dst), [](float f) { return kk::floatToE5M2(f); }); break;
        case collFloat32: convert(acc, n, static_cast<float*>(dst), [](float f) { return f; }); break;
        default: std::memcpy(dst, acc, n * sizeof(double)); break;
      }
    }
  }
  template <class E, class Conv>
  static void convert(const double* acc, size_t n, E* dst, Conv conv) {
    for (size_t i = 0; i < n; ++i) dst[i] = conv(static_cast<float>(acc[i]));
  }
  static void storeBits(size_t esize, const uint64_t* bits, size_t n, void* dst) {
    switch (esize) {
      case 1: narrow(bits, n, static_cast<uint8_t*>(dst)); break;
      case 2: narrow(bits, n, static_cast<uint16_t*>(dst)); break;
      case 4: narrow(bits, n, static_cast<uint32_t*>(dst)); break;
      default: std::memcpy(dst, bits, n * 8); break;
    }
  }
  template <class E>
  static void narrow(const uint64_t* bits, size_t n, E* dst) {
    for (size_t i = 0; i < n; ++i) dst[i] = static_cast<E>(bits[i]);
  }

  // At most kBlock elements per pass through the accumulators (on the stack).
  static constexpr size_t kBlock = 1024;

  template <RedOp O, NumKind K>
  static void fill(const DataGen& g, int rank, size_t first, size_t n, uint8_t* dst) {
    Acc<K> acc[kBlock];
    for (size_t at = 0; at < n; at += kBlock) {
      const size_t m = std::min(kBlock, n - at);
      for (size_t i = 0; i < m; ++i) acc[i] = value<O, K>(g, rank, first + at + i);
      store<K>(g, acc, m, dst + at * g.esize_);
    }
  }
  // Op None: raw bit patterns of the element size, NaNs included.
  static void fillRaw(const DataGen& g, int rank, size_t first, size_t n, uint8_t* dst) {
    uint64_t bits[kBlock];
    for (size_t at = 0; at < n; at += kBlock) {
      const size_t m = std::min(kBlock, n - at);
      for (size_t i = 0; i < m; ++i) bits[i] = hash(g, rank, first + at + i);
      storeBits(g.esize_, bits, m, dst + at * g.esize_);
    }
  }

  template <RedOp O, NumKind K>
  static void reduced(const DataGen& g, size_t first, size_t n, uint8_t* dst) {
    Acc<K> acc[kBlock];
    for (size_t at = 0; at < n; at += kBlock) {
      const size_t m = std::min(kBlock, n - at);
      // Exact arithmetic in the value's own domain, rank by rank: by
      // construction of the inputs no partial result overflows it.
      for (size_t i = 0; i < m; ++i)
        acc[i] = O == RedOp::PreMulSum ? Acc<K>{0} : value<O, K>(g, 0, first + at + i);
      for (int r = O == RedOp::PreMulSum ? 0 : 1; r < g.nranks_; ++r)
        for (size_t i = 0; i < m; ++i) combine<O, K>(acc[i], value<O, K>(g, r, first + at + i));
      if constexpr (O == RedOp::Avg) divide<K>(g, acc, m);
      store<K>(g, acc, m, dst + at * g.esize_);
    }
  }
  // avg: integers truncate toward zero (as the library does), double
  // divides in double; float and the narrow types: the exact sum widened to
  // float, divided in float, then rounded once to the type (by store).
  template <NumKind K>
  static void divide(const DataGen& g, Acc<K>* acc, size_t m) {
    const int64_t n = g.nranks_;
    for (size_t i = 0; i < m; ++i) {
      if constexpr (K == NumKind::Signed) acc[i] /= n;
      else if constexpr (K == NumKind::Unsigned) acc[i] /= static_cast<uint64_t>(n);
      else if (g.dtype_ == collFloat64) acc[i] /= static_cast<double>(n);
      else acc[i] = static_cast<double>(static_cast<float>(acc[i]) / static_cast<float>(n));
    }
  }

  // Calls f.template operator()<O, K>() for the generator's op and kind.
  template <class F>
  static void dispatch(const DataGen& g, F&& f) {
    switch (g.op_) {
      case RedOp::Sum: return withKind<RedOp::Sum>(g, f);
      case RedOp::Prod: return withKind<RedOp::Prod>(g, f);
      case RedOp::Max: return withKind<RedOp::Max>(g, f);
      case RedOp::Min: return withKind<RedOp::Min>(g, f);
      case RedOp::Avg: return withKind<RedOp::Avg>(g, f);
      case RedOp::PreMulSum: return withKind<RedOp::PreMulSum>(g, f);
      case RedOp::None: break;
    }
  }
  template <RedOp O, class F>
  static void withKind(const DataGen& g, F& f) {
    switch (g.kind_) {
      case NumKind::Signed: return f.template operator()<O, NumKind::Signed>();
      case NumKind::Unsigned: return f.template operator()<O, NumKind::Unsigned>();
      case NumKind::Float: return f.template operator()<O, NumKind::Float>();
    }
  }
};

void DataGen::fill(int rank, size_t first, size_t n, void* dst) const {
  auto* p = static_cast<uint8_t*>(dst);
  if (op_ == RedOp::None) return DataLoops::fillRaw(*this, rank, first, n, p);
  DataLoops::dispatch(*this, [&]<RedOp O, NumKind K>() { DataLoops::fill<O, K>(*this, rank, first, n, p); });
}

void DataGen::expectReducedRange(size_t first, size_t n, void* dst) const {
  auto* p = static_cast<uint8_t*>(dst);
  DataLoops::dispatch(*this, [&]<RedOp O, NumKind K>() { DataLoops::reduced<O, K>(*this, first, n, p); });
}

void DataGen::storeNum(const Num& n, void* dst) const {
  if (op_ == RedOp::None || kind_ == NumKind::Unsigned) return DataLoops::storeBits(esize_, &n.u, 1, dst);
  if (kind_ == NumKind::Signed) {
    const uint64_t bits = static_cast<uint64_t>(n.i);
    return DataLoops::storeBits(esize_, &bits, 1, dst);
  }
  DataLoops::store<NumKind::Float>(*this, &n.f, 1, dst);
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
