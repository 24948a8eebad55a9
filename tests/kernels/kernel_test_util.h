// kernel_test_util.h — shared helpers for the kernel tests: random data with
// special values, and an independent per-element reference.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "coll/kernels/reduce.h"

namespace ktest {

namespace ck = coll::kernels;

// The ISAs this CPU (and build) can run, scalar first.
std::vector<std::string> availableIsas();

template <class To, class From> To bitCast(From f) {
  static_assert(sizeof(To) == sizeof(From));
  To t;
  std::memcpy(&t, &f, sizeof t);
  return t;
}

inline bool isFloatType(ck::DType t) {
  return t == ck::DType::Float16 || t == ck::DType::Float32 || t == ck::DType::Float64 ||
         t == ck::DType::Bfloat16 || t == ck::DType::Fp8E4M3 || t == ck::DType::Fp8E5M2;
}
inline bool isSignedInt(ck::DType t) {
  return t == ck::DType::Int8 || t == ck::DType::Int32 || t == ck::DType::Int64;
}

// ------------------------------------------------------------ generators --
float randomFloat32(std::mt19937_64& rng);
double randomFloat64(std::mt19937_64& rng);
// Fill n elements of type t with a mix of ordinary, boundary and special values.
void fillRandom(ck::DType t, void* p, size_t n, std::mt19937_64& rng);

// ------------------------------------------------------------- reference --
struct RefParams {
  ck::Op op = ck::Op::Sum;
  bool hasA = true;
  bool pre = false;    // effective: apply pre-multiply
  bool post = false;   // effective: apply post-divide
  ck::Scalar scalar{};
  uint64_t divisor = 0;
};
// Expected dst[i] for one element; a may be null when !hasA.  Writes
// dtypeSize(t) bytes.
void referenceElement(ck::DType t, const RefParams& p, const void* a, const void* b, void* out);

// Canonical NaN bit patterns the kernels store.
constexpr uint32_t kNaN32 = 0x7fc00000u;
constexpr uint64_t kNaN64 = 0x7ff8000000000000ull;
constexpr uint16_t kNaNHalf = 0x7e00, kNaNBf16 = 0x7fc0;
constexpr uint8_t kNaNE4M3 = 0x7f, kNaNE5M2 = 0x7e;

}  // namespace ktest
