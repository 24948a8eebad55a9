// emu_values.h — what the device emulation tests share: every dtype, and
// the pre-multiplication scalar they use (1.5 for float types, 3 for
// integers), stored as a device scalar would be and as the host reference
// sees it.
#pragma once

#include <cstdint>
#include <cstring>

#include "coll/kernels/reduce.h"

namespace coll::emutest {

using kernels::DType;

constexpr DType kAllDTypes[] = {DType::Int8,    DType::Uint8,   DType::Int32,   DType::Uint32,
                                DType::Int64,   DType::Uint64,  DType::Float16, DType::Float32,
                                DType::Float64, DType::Bfloat16, DType::Fp8E4M3, DType::Fp8E5M2};

inline bool isFloat(DType d) {
  return d == DType::Float16 || d == DType::Float32 || d == DType::Float64 || d == DType::Bfloat16 ||
         d == DType::Fp8E4M3 || d == DType::Fp8E5M2;
}

// fn with the tests' scalar set (for a host-scalar pre-mul, or the
// reference of a device-scalar one: the kernel reads the stored value).
inline kernels::ReduceFn withTestScalar(kernels::ReduceFn fn) {
  if (isFloat(fn.dtype)) fn.scalar.f = 1.5;
  else fn.scalar.i = 3;
  return fn;
}

// The tests' scalar in d's storage format at p (8 bytes room).
inline void storeTestScalar(DType d, unsigned char* p) {
  const int64_t iv = 3;
  switch (d) {
    case DType::Float32: { const float f = 1.5f; std::memcpy(p, &f, 4); break; }
    case DType::Float64: { const double f = 1.5; std::memcpy(p, &f, 8); break; }
    case DType::Float16: { const uint16_t h = kernels::floatToHalf(1.5f); std::memcpy(p, &h, 2); break; }
    case DType::Bfloat16: { const uint16_t h = kernels::floatToBf16(1.5f); std::memcpy(p, &h, 2); break; }
    case DType::Fp8E4M3: p[0] = kernels::floatToE4M3(1.5f); break;
    case DType::Fp8E5M2: p[0] = kernels::floatToE5M2(1.5f); break;
    default: std::memcpy(p, &iv, kernels::dtypeSize(d)); break;
  }
}

}  // namespace coll::emutest
