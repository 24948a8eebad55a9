// internal.h — what the per-ISA translation units export to the dispatcher
// (and to the tests).  Not installed, not part of the public interface.
//
// The ISA files are compiled with -mavx2 / -mavx512* flags.  They must not
// define (or instantiate) any inline function or template with external
// linkage that a baseline translation unit could also emit, or the linker
// might keep the AVX version for everyone: they include only this header,
// reduce.h and <immintrin.h>, and keep everything in an anonymous namespace.
#pragma once

#include <cstddef>
#include <cstdint>

#include "coll/kernels/reduce.h"

namespace coll::kernels::detail {

using ReduceImplFn = void (*)(const ReduceFn& fn, void* dst, const void* a, const void* b,
                              size_t n, bool applyPre, bool applyPost);
// Kernel-semantics conversions of n elements of `type` (a floating type):
// narrowing rounds RNE and stores the canonical NaN for any NaN.
using FromFloatFn = void (*)(DType type, const float* src, void* dst, size_t n);
using ToFloatFn = void (*)(DType type, const void* src, float* dst, size_t n);

struct IsaImpl {
  const char* name;
  ReduceImplFn reduce;
  FromFloatFn fromFloat;
  ToFloatFn toFloat;
};

// Defined in reduce_scalar.cc (always), reduce_avx2.cc / reduce_avx512.cc
// (x86-64 builds only).
extern const IsaImpl kScalarImpl;
extern const IsaImpl kAvx2Impl;
extern const IsaImpl kAvx512Impl;

// Scalar reference, usable from the ISA files for tails and rare cases.
void reduceScalar(const ReduceFn& fn, void* dst, const void* a, const void* b, size_t n,
                  bool applyPre, bool applyPost);

// For tests and the benchmark: the implementation named `isa` if this CPU
// can run it (nullptr otherwise).  Does not change the active one.
const IsaImpl* findIsa(const char* isa);

}  // namespace coll::kernels::detail
