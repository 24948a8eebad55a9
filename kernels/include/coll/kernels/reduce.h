// reduce.h — host reduction kernels: dst = post(a op pre(b)).
//
// One entry point for the executor; it dispatches at run time to the best
// implementation this CPU has (AVX-512 with BF16, AVX2+F16C, scalar).  Every
// implementation gives bit-identical results: low-precision types (fp16,
// bf16, fp8 e4m3/e5m2) are widened to float, combined, and rounded back with
// round-to-nearest-even, once per call.
#pragma once

#include <cstddef>
#include <cstdint>

namespace coll::kernels {

// Values equal collDataType_t's.
enum class DType : uint8_t {
  Int8 = 0, Uint8 = 1, Int32 = 2, Uint32 = 3, Int64 = 4, Uint64 = 5,
  Float16 = 6, Float32 = 7, Float64 = 8, Bfloat16 = 9,
  Fp8E4M3 = 10, Fp8E5M2 = 11,
};
constexpr int kNumDTypes = 12;

// Values equal collRedOp_t's built-ins (avg and pre-mul sum are Sum with a
// post-divide or a pre-multiply, see ReduceFn).
enum class Op : uint8_t { Sum = 0, Prod = 1, Max = 2, Min = 3 };
constexpr int kNumOps = 4;

size_t dtypeSize(DType t);
const char* dtypeName(DType t);  // "int8", "float16", "bfloat16", "f8e4m3", ...
const char* opName(Op o);        // "sum", "prod", "max", "min"

// A scalar in the dtype's own arithmetic domain: signed ints in i, unsigned
// in u, every floating type (incl. fp16/bf16/fp8, widened) in f.
union Scalar {
  int64_t i;
  uint64_t u;
  double f;
};

struct ReduceFn {
  DType dtype = DType::Float32;
  Op op = Op::Sum;
  bool premul = false;   // multiply the b operand by `scalar` (pre-mul sum)
  Scalar scalar{};       // the scalar, in the dtype's domain (see Scalar)
  uint64_t divisor = 0;  // post-op: divide the result by this (avg); 0 = none
};

// dst[i] = post( a[i] op pre(b[i]) )      when a != nullptr
// dst[i] = post( pre(b[i]) )              when a == nullptr (copy/scale)
// pre is applied only when applyPre and fn.premul; post only when applyPost
// and fn.divisor != 0.  Integer divide truncates toward zero; float types
// divide in float (fp16/bf16/fp8 then round once).  dst may alias a or b
// exactly (same pointer), never partially.  n == 0 is a no-op.
void reduce(const ReduceFn& fn, void* dst, const void* a, const void* b,
            size_t n, bool applyPre, bool applyPost);

// The implementation reduce() dispatched to: "avx512", "avx2" or "scalar".
// COLL_KERNELS_ISA=scalar|avx2|avx512 lowers it (for tests and comparisons);
// asking for more than the CPU has is an error reported by setIsa.
const char* activeIsa();
bool setIsa(const char* name);  // false if unknown or unsupported here

// Conversions used by the kernels, tests and perf tools (round to nearest
// even; NaN stays NaN; overflow saturates to inf for fp16/bf16/e5m2 and to
// NaN for e4m3, which has no inf).
uint16_t floatToHalf(float f);
float halfToFloat(uint16_t h);
uint16_t floatToBf16(float f);
float bf16ToFloat(uint16_t b);
uint8_t floatToE4M3(float f);
float e4m3ToFloat(uint8_t v);
uint8_t floatToE5M2(float f);
float e5m2ToFloat(uint8_t v);

}  // namespace coll::kernels
