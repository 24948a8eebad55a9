// local_reduce.h — the local path's reduction kernel (device/local_clique.h,
// schedule/local_plan.h): every output = the reduction of up to
// sched::kLocalFan inputs, in input order, in one launch.
//
// Why a kernel of its own: the ranks of one process are all addressable by
// one kernel, so a hub can read each rank's input once and write each
// rank's output once (2N·S bytes for an N-rank all-reduce on one GPU, the
// least any all-reduce moves there), where a chain of two-input
// reductions and copies moves 5(N-1)·S and costs 2(N-1) stream operations.
//
// Per element, in the reduction kernels' own arithmetic (reduce_impl.cuh's
// one<>() / vecOp<>(), the host reference's bits): input k pre-multiplied by
// its own scalar when asked and rounded to the dtype (as the other paths
// stage it), combined with the accumulator and rounded, the post-op (avg)
// with the last input; a lone input, pre-multiplied or not, then goes
// through one more rounding step with the post-op (as a reduction of one
// staged input does).  The same thread reads an element of every input
// before it writes that element of any output, so an output may be exactly
// an input; partial overlaps are the caller's to avoid (the plan does).
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "coll/kernels/reduce.h"
#include "schedule/local_plan.h"

namespace coll::device {

struct LocalReduceLaunch {
  kernels::DType dtype = kernels::DType::Float32;
  kernels::Op op = kernels::Op::Sum;
  int nsrc = 0, ndst = 0;  // 1..kLocalFan each
  const void* src[sched::kLocalFan] = {};
  void* dst[sched::kLocalFan] = {};
  uint32_t preMask = 0;                          // bit k: pre-multiply input k (op must be Sum)
  const void* scalarPtr[sched::kLocalFan] = {};  // input k's scalar: a device element (its storage format),
  uint64_t scalarBits[sched::kLocalFan] = {};    // or, when null, these compute-type bits
  uint64_t divisor = 0;                          // post-op after the last input; 0: none
  uint64_t count = 0;                            // elements
  // Set by launchLocalReduce: `head` elements up to a 16-byte boundary of
  // every pointer, then `nvec` 16-byte vectors, then the rest.
  uint64_t head = 0, nvec = 0;
};

// Checks the arguments, lays the elements out (vectors when every pointer
// has the same offset modulo 16), and launches at most maxBlocks blocks on
// s.  count == 0 launches nothing.  The host scalars' bits come from
// hostScalarBits(dtype, scalar).
cudaError_t launchLocalReduce(LocalReduceLaunch l, unsigned maxBlocks, cudaStream_t s);
uint64_t hostScalarBits(kernels::DType dtype, const kernels::Scalar& s);
// Blocks enough to fill a GPU of smCount multiprocessors.
unsigned localReduceMaxBlocks(int smCount);
// Every dst[k][0, bytes) = src[0, bytes), k < ndst <= kLocalFan, reading the
// source once (broadcast, all-gather).  Outputs must not overlap the source
// or be it.  Pointers at different offsets modulo 16 take one runtime copy
// per output instead.
cudaError_t launchLocalCopy(const void* src, void* const* dst, int ndst, uint64_t bytes, unsigned maxBlocks,
                            cudaStream_t s);
// Every dtype and op's kernel loaded now (device/kernel_loading.h).
cudaError_t loadLocalReduceKernels();

}  // namespace coll::device
