// device_values.h — what the device collective tests (device_coll_test.cu,
// device_local_test.cu) share: the collectives and ops under test, the
// inputs' generator, each rank's pre-mul scalar and the host kernels'
// function for an op, so that both check against the same values.
#pragma once

#include <cstdint>
#include <cstring>

#include "coll/kernels/reduce.h"

namespace devvalues {

namespace ck = coll::kernels;

// The collectives under test.
enum class Coll { AllReduce, ReduceScatter, Reduce, AllGather, Broadcast };
inline const char* collName(Coll c) {
  switch (c) {
    case Coll::AllReduce: return "allreduce";
    case Coll::ReduceScatter: return "reducescatter";
    case Coll::Reduce: return "reduce";
    case Coll::AllGather: return "allgather";
    case Coll::Broadcast: return "broadcast";
  }
  return "?";
}
inline bool reducing(Coll c) { return c == Coll::AllReduce || c == Coll::ReduceScatter || c == Coll::Reduce; }

enum class OpCase { Sum, Prod, Max, Min, Avg, PreMulHost, PreMulDevice };
inline const char* opCaseName(OpCase o) {
  static const char* kNames[] = {"sum", "prod", "max", "min", "avg", "premul-host", "premul-device"};
  return kNames[static_cast<int>(o)];
}

// The inputs' generator: splitmix64, a few operations per value.  The
// sanitizer builds run this file unoptimized, where std::mt19937_64 took a
// third of an emulated device test's time.
struct InputRng {
  uint64_t s;
  uint64_t operator()() {
    uint64_t z = (s += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }
};

// Small-magnitude values, so products and sums stay mostly finite: a
// multiple of 1/8 in [-2, 2], a quarter of them scaled by 1.37 (one draw
// gives both).
inline float smallValue(InputRng& rng) {
  const uint64_t r = rng();
  return float(int(r % 33) - 16) / 8.0f * (((r >> 32) % 4 == 0) ? 1.37f : 1.0f);
}

inline void fill(ck::DType t, void* p, size_t n, InputRng& rng) {
  auto* b = static_cast<unsigned char*>(p);
  for (size_t i = 0; i < n; ++i) {
    switch (t) {
      case ck::DType::Int8: { int8_t v = int8_t(rng()); std::memcpy(b + i, &v, 1); break; }
      case ck::DType::Uint8: { uint8_t v = uint8_t(rng()); std::memcpy(b + i, &v, 1); break; }
      case ck::DType::Int32: { int32_t v = int32_t(rng() % 2001) - 1000; std::memcpy(b + 4 * i, &v, 4); break; }
      case ck::DType::Uint32: { uint32_t v = uint32_t(rng()); std::memcpy(b + 4 * i, &v, 4); break; }
      case ck::DType::Int64: { int64_t v = int64_t(rng()); std::memcpy(b + 8 * i, &v, 8); break; }
      case ck::DType::Uint64: { uint64_t v = rng(); std::memcpy(b + 8 * i, &v, 8); break; }
      case ck::DType::Float16: { uint16_t v = ck::floatToHalf(smallValue(rng)); std::memcpy(b + 2 * i, &v, 2); break; }
      case ck::DType::Float32: { const float f = smallValue(rng); std::memcpy(b + 4 * i, &f, 4); break; }
      case ck::DType::Float64: {
        const double d = double(smallValue(rng)) * (1.0 + double(rng() % 997) * 1e-7);
        std::memcpy(b + 8 * i, &d, 8);
        break;
      }
      case ck::DType::Bfloat16: { uint16_t v = ck::floatToBf16(smallValue(rng)); std::memcpy(b + 2 * i, &v, 2); break; }
      case ck::DType::Fp8E4M3: { uint8_t v = ck::floatToE4M3(smallValue(rng)); std::memcpy(b + i, &v, 1); break; }
      case ck::DType::Fp8E5M2: { uint8_t v = ck::floatToE5M2(smallValue(rng)); std::memcpy(b + i, &v, 1); break; }
    }
  }
}

// Rank r's pre-mul scalar: one element in storage format (the device
// residence's memory) and the same value in the host kernels' domain.
inline void scalarOf(ck::DType t, int r, unsigned char elem[8], ck::Scalar* s) {
  const float f = 0.5f + 0.25f * float(r % 5);  // exact in every float format
  std::memset(elem, 0, 8);
  s->u = 0;
  switch (t) {
    case ck::DType::Int8: case ck::DType::Int32: case ck::DType::Int64: {
      const int64_t v = r % 3 - 1;  // -1, 0, 1
      std::memcpy(elem, &v, ck::dtypeSize(t));  // little endian: the low bytes
      s->i = v;
      break;
    }
    case ck::DType::Uint8: case ck::DType::Uint32: case ck::DType::Uint64: {
      const uint64_t v = uint64_t(r % 3 + 1);
      std::memcpy(elem, &v, ck::dtypeSize(t));
      s->u = v;
      break;
    }
    case ck::DType::Float16: { uint16_t v = ck::floatToHalf(f); std::memcpy(elem, &v, 2); s->f = f; break; }
    case ck::DType::Float32: std::memcpy(elem, &f, 4); s->f = f; break;
    case ck::DType::Float64: { double d = f; std::memcpy(elem, &d, 8); s->f = d; break; }
    case ck::DType::Bfloat16: { uint16_t v = ck::floatToBf16(f); std::memcpy(elem, &v, 2); s->f = f; break; }
    case ck::DType::Fp8E4M3: { uint8_t v = ck::floatToE4M3(f); elem[0] = v; s->f = f; break; }
    case ck::DType::Fp8E5M2: { uint8_t v = ck::floatToE5M2(f); elem[0] = v; s->f = f; break; }
  }
}

// The host kernels' function for op o on rank `rank` of n (its own pre-mul
// scalar; avg divides by n).
inline ck::ReduceFn fnOf(ck::DType t, OpCase o, int rank, int n) {
  ck::ReduceFn fn;
  fn.dtype = t;
  switch (o) {
    case OpCase::Sum: fn.op = ck::Op::Sum; break;
    case OpCase::Prod: fn.op = ck::Op::Prod; break;
    case OpCase::Max: fn.op = ck::Op::Max; break;
    case OpCase::Min: fn.op = ck::Op::Min; break;
    case OpCase::Avg: fn.op = ck::Op::Sum; fn.divisor = uint64_t(n); break;
    case OpCase::PreMulHost: case OpCase::PreMulDevice: {
      unsigned char elem[8];
      fn.op = ck::Op::Sum;
      fn.premul = true;
      scalarOf(t, rank, elem, &fn.scalar);
      break;
    }
  }
  return fn;
}

}  // namespace devvalues
