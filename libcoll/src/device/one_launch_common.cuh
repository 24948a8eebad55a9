// one_launch_common.cuh — what the one-launch kernels (flag-based,
// small_allreduce.cu; LL, ll_allreduce.cu) and the program kernel
// (program_kernel.cu) share (nvcc only): the kernel of a (dtype, op) pair,
// and the stage context that pre-multiplies the input.
#pragma once

#include <cstring>

#include "coll/kernel_launch.h"
#include "device/small_allreduce.h"
#include "launch.h"
#include "reduce_impl.cuh"

namespace coll::device {

// K<D, O>::kernel() is the kernel for dtype D and op O (every pair's has the
// same parameters); nullptr for an unknown pair.
template <template <kernels::DType, kernels::Op> class K>
auto oneLaunchKernel(kernels::DType d, kernels::Op o)
    -> decltype(K<kernels::DType::Float32, kernels::Op::Sum>::kernel()) {
  using kernels::DType;
  using kernels::Op;
  using Fn = decltype(K<DType::Float32, Op::Sum>::kernel());
  auto forOp = [o](Fn sum, Fn prod, Fn max, Fn min) -> Fn {
    switch (o) {
      case Op::Sum: return sum;
      case Op::Prod: return prod;
      case Op::Max: return max;
      case Op::Min: return min;
    }
    return nullptr;
  };
  switch (d) {
#define COLL_ONE_LAUNCH_CASE(D)                                                                                 \
  case DType::D:                                                                                             \
    return forOp(K<DType::D, Op::Sum>::kernel(), K<DType::D, Op::Prod>::kernel(), K<DType::D, Op::Max>::kernel(), \
                 K<DType::D, Op::Min>::kernel());
    COLL_DEVICE_DTYPES(COLL_ONE_LAUNCH_CASE)
#undef COLL_ONE_LAUNCH_CASE
  }
  return nullptr;
}

// Loads every (dtype, op) kernel of K now (cuda::load says why); the first
// error, having tried them all.
template <template <kernels::DType, kernels::Op> class K>
cudaError_t loadOneLaunchKernels() {
  cudaError_t first = cudaSuccess;
  for (int d = 0; d < kernels::kNumDTypes; ++d)
    for (int o = 0; o < kernels::kNumOps; ++o) {
      const cudaError_t e = cuda::load(oneLaunchKernel<K>(static_cast<kernels::DType>(d), static_cast<kernels::Op>(o)));
      if (first == cudaSuccess) first = e;
    }
  return first;
}

// The stage step: pre(x) with the call's scalar, read from device memory
// when it lives there, else from the host's bits (computeScalarBits).
template <kernels::DType D>
__device__ __forceinline__ kernels::device::Ctx<typename kernels::device::Elem<D>::C> stageContext(
    bool premul, const void* deviceScalar, uint64_t scalarBits) {
  using E = kernels::device::Elem<D>;
  using C = typename E::C;
  using S = typename E::S;
  kernels::device::Ctx<C> stage{};
  stage.hasA = false;
  stage.pre = premul;
  stage.post = false;
  if (stage.pre) {
    if (deviceScalar != nullptr) stage.s = E::load(*static_cast<const S*>(deviceScalar));
    else memcpy(&stage.s, &scalarBits, sizeof(C));
  }
  return stage;
}

template <kernels::DType D>
__device__ __forceinline__ kernels::device::Ctx<typename kernels::device::Elem<D>::C> stageContext(
    const SmallAllReduceArgs& a, uint64_t scalarBits) {
  return stageContext<D>(a.fn.premul, a.deviceScalar, scalarBits);
}

}  // namespace coll::device
