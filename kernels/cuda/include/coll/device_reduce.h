// device_reduce.h — CUDA reduction kernels: dst = post(a op pre(b)) on the GPU.
//
// The device twin of coll/kernels/reduce.h, with the same semantics and the
// same bits: every dtype (int8 ... fp8 e5m2) and op (sum, prod, max, min; avg
// is sum + post-divide, pre-multiplied sum is sum + pre-multiply), low
// precision types computed in float and rounded once (round to nearest even),
// NaN results stored as the type's canonical quiet NaN.  For the same inputs
// a device call writes exactly the bytes kernels::reduce() writes on the host
// (tests/gpu checks this bit for bit).
//
// Calls are asynchronous and stream-ordered: they enqueue work on `stream`
// (the current device's stream) and return; they never synchronise, allocate
// or copy to or from the host.  Launch errors come back as the return value;
// faults during the kernel show up later, like any CUDA kernel's.
//
// Plain C++ header: usable without nvcc (link coll::kernels_cuda).
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

#include "coll/kernels/reduce.h"

namespace coll::kernels {

// The pre-op scalar and the post-op divisor of a reduction.
//  * residence None: no pre-multiply.
//  * residence Host: multiply b by `host` (in the dtype's domain, exactly like
//    ReduceFn::scalar: i for signed ints, u for unsigned, f for every float).
//  * residence Device: multiply b by the one element of the reduce's dtype (in
//    its storage format: e.g. 2 bytes of bf16) at device address `device`.  It
//    is read when the kernel runs, so a stream-ordered update before the call
//    is seen (NCCL's ncclScalarDevice).
//  * divisor != 0: divide the result by it (avg: divisor = nranks), with the
//    host's rules: integers truncate toward zero, floats divide in float.
struct ScalarArg {
  enum class Residence : uint8_t { None = 0, Host = 1, Device = 2 };
  Residence residence = Residence::None;
  Scalar host{};
  const void* device = nullptr;
  uint64_t divisor = 0;

  static ScalarArg none() { return ScalarArg{}; }
  static ScalarArg hostScalar(Scalar s) {
    ScalarArg a;
    a.residence = Residence::Host;
    a.host = s;
    return a;
  }
  static ScalarArg deviceScalar(const void* p) {
    ScalarArg a;
    a.residence = Residence::Device;
    a.device = p;
    return a;
  }
  static ScalarArg average(uint64_t nranks) {
    ScalarArg a;
    a.divisor = nranks;
    return a;
  }
};

// dst[i] = post( a[i] op pre(b[i]) )   for i < count    (a != nullptr)
// dst[i] = post( pre(b[i]) )                            (a == nullptr: copy/scale)
// Pointers are device (or managed) memory of the current device and must be
// aligned to the dtype's size; any other alignment (dst, a, b each at any
// element offset) is fine, the fastest being a common offset modulo 16 bytes.
// dst may alias a or b exactly, never partially.  count == 0 is a no-op.
// Returns cudaSuccess, cudaErrorInvalidValue (bad dtype/op/residence, null
// pointer, partial overlap), cudaErrorMisalignedAddress (pointer not
// element-aligned) or the launch's error.
cudaError_t collDeviceReduce(void* dst, const void* a, const void* b, size_t count, DType dtype, Op op,
                             const ScalarArg& scalar, cudaStream_t stream);

// The host reduce()'s calling convention, for the executor: pre applies when
// applyPre && fn.premul (value fn.scalar, or the element at deviceScalar when
// that is non-null), post when applyPost && fn.divisor != 0.
cudaError_t collDeviceReduce(const ReduceFn& fn, void* dst, const void* a, const void* b, size_t count,
                             bool applyPre, bool applyPost, const void* deviceScalar, cudaStream_t stream);

// Loads every reduction kernel on the current device now instead of at its
// first launch (coll/kernel_launch.h, cuda::load, says why).  Returns the
// first error, having tried them all.
cudaError_t collDeviceReduceLoad();

}  // namespace coll::kernels
