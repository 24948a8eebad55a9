// launch.h — between the dispatcher (device_reduce.cc, plain C++) and the
// per-dtype kernel files (reduce_<dtype>.cu).  Not installed.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

#include "coll/kernels/reduce.h"

namespace coll::kernels::device {

enum : uint32_t { kHasA = 1u, kPre = 2u, kPost = 4u };

// One launch: [head elements][nvec vectors of vecBytes][tail elements].
// After `head` elements every pointer is vecBytes-aligned (they are congruent
// modulo vecBytes), so the vectors are plain aligned loads and stores.
struct LaunchArgs {
  void* dst = nullptr;
  const void* a = nullptr;  // null when !(flags & kHasA)
  const void* b = nullptr;
  size_t head = 0;
  size_t nvec = 0;
  size_t tail = 0;
  int vecBytes = 16;
  Op op = Op::Sum;
  uint32_t flags = kHasA;
  const void* scalarPtr = nullptr;  // kPre: device element (storage format) or null
  uint64_t scalarBits = 0;          // kPre with no scalarPtr: compute-type value's bits
  uint64_t divisor = 0;             // kPost
  unsigned grid = 1;
  unsigned block = 256;
  cudaStream_t stream = nullptr;
};

// The vector widths (bytes) a dtype of `elemSize` bytes has kernels for:
// 16 and one element always; 8 and 4 too for plain reductions (no pre/post,
// a present), so mutually misaligned buffers still move in wide words.
constexpr bool vecWidthSupported(size_t elemSize, int vecBytes, bool simple) {
  if (vecBytes < int(elemSize)) return false;
  if (vecBytes == 16 || vecBytes == int(elemSize)) return true;
  return simple && (vecBytes == 8 || vecBytes == 4);
}

// The host scalar in the kernels' compute type of t (as the host reference
// converts it), as raw bits for LaunchArgs::scalarBits.
uint64_t computeScalarBits(DType t, const Scalar& s);

// Defined (explicitly instantiated) in reduce_<dtype>.cu.
template <DType D> cudaError_t launchReduce(const LaunchArgs& args);
template <DType D> cudaError_t loadReduce();  // every kernel of D (cuda::load)

#define COLL_DEVICE_DTYPES(X) \
  X(Int8) X(Uint8) X(Int32) X(Uint32) X(Int64) X(Uint64) \
  X(Float16) X(Float32) X(Float64) X(Bfloat16) X(Fp8E4M3) X(Fp8E5M2)

#define COLL_DEVICE_EXTERN(D) \
  extern template cudaError_t launchReduce<DType::D>(const LaunchArgs&); \
  extern template cudaError_t loadReduce<DType::D>();
COLL_DEVICE_DTYPES(COLL_DEVICE_EXTERN)
#undef COLL_DEVICE_EXTERN

}  // namespace coll::kernels::device
