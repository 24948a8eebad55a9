// small_allreduce.cu — see small_allreduce.h.  The element math is the
// reduction kernels' own (one<>() of kernels/cuda/src/reduce_impl.cuh), so the
// bits equal the generic path's and the host reference's.
#include "coll/block_shared.h"
#include "device/one_launch_common.cuh"
#include "device/small_allreduce.h"
#include "p2p/flag_sync.cuh"

namespace coll::device {
namespace {

namespace kd = coll::kernels::device;
using p2p::arrive;
using p2p::waitForAll;
using kernels::DType;
using kernels::Op;

constexpr unsigned kThreads = 512;

struct KernelArgs {
  SmallAllReduceArgs a;
  uint64_t scalarBits;  // host pre-mul scalar in the compute type
  int nseg;
  SmallSeg segs[kMaxSmallSegs];
};

template <DType D, Op O>
__global__ void __launch_bounds__(kThreads) smallAllReduceKernel(KernelArgs k) {
  using E = kd::Elem<D>;
  using S = typename E::S;
  using C = typename E::C;
  const SmallAllReduceArgs& a = k.a;
  COLL_SHARED(unsigned long long, target);
  if (threadIdx.x == 0) {
    target = atomicAdd(a.counter, 1ull) + 1;
    p2p::announceCall(a.flags[a.rank], a.sig);
  }
  __syncthreads();
  const size_t slotOff = (target & 1) * a.slotBytes;
  auto slot = [&](int r) { return reinterpret_cast<const S*>(a.slots[r] + slotOff); };

  // 1. Stage: mine = pre(send), every segment.
  const kd::Ctx<C> stage = stageContext<D>(a, k.scalarBits);
  S* mine = reinterpret_cast<S*>(a.slots[a.rank] + slotOff);
  for (int g = 0; g < k.nseg; ++g) {
    const SmallSeg& sg = k.segs[g];
    const S* send = static_cast<const S*>(sg.send);
    for (size_t i = threadIdx.x; i < sg.count; i += blockDim.x)
      mine[sg.offset + i] = kd::one<D, O, false>(S{}, send[i], stage);
  }
  __syncthreads();

  // 2. Arrive, then wait for every rank (bounded) and compare the calls.
  // A rank that timed out or met different arguments writes nothing.
  if (threadIdx.x == 0) arrive(a.flags[a.rank], target, a.sig);
  if (!waitForAll(a.flags, a.nranks, a.rank, target, a.sig, a.timeoutNs, a.error)) return;

  // 3. recv = post(((s0 op s1) op s2) ...), rounded after each step like the
  // chain of reduce kernels; not for a reduce's non-root (recv == nullptr:
  // its recvbuff may be NULL).
  kd::Ctx<C> step{};
  step.hasA = true;
  step.d = a.fn.divisor;
  for (int g = 0; g < k.nseg; ++g) {
    const SmallSeg& sg = k.segs[g];
    S* recv = static_cast<S*>(sg.recv);
    if (recv == nullptr) continue;
    for (size_t i = threadIdx.x; i < sg.count; i += blockDim.x) {
      const size_t at = sg.offset + i;
      S acc = slot(0)[at];
      if (a.nranks == 1) {
        step.hasA = false;
        step.post = a.fn.divisor != 0;
        acc = kd::one<D, O, false>(S{}, acc, step);
      }
      for (int r = 1; r < a.nranks; ++r) {
        step.post = r == a.nranks - 1 && a.fn.divisor != 0;
        acc = kd::one<D, O, false>(acc, slot(r)[at], step);
      }
      recv[i] = acc;
    }
  }
}

template <DType D, Op O>
struct SmallKernel {
  static auto kernel() { return &smallAllReduceKernel<D, O>; }
};

}  // namespace

cudaError_t loadSmallAllReduceKernels() { return loadOneLaunchKernels<SmallKernel>(); }

cudaError_t launchSmallAllReduceGroup(const SmallAllReduceArgs& a, const SmallSeg* segs, int nseg, cudaStream_t s) {
  const auto fn = oneLaunchKernel<SmallKernel>(a.fn.dtype, a.fn.op);
  if (fn == nullptr || nseg < 1 || nseg > kMaxSmallSegs) return cudaErrorInvalidValue;
  KernelArgs k{};
  k.a = a;
  k.nseg = nseg;
  const size_t es = kernels::dtypeSize(a.fn.dtype);
  for (int g = 0; g < nseg; ++g) {
    if ((segs[g].offset + segs[g].count) * es > a.slotBytes) return cudaErrorInvalidValue;
    k.segs[g] = segs[g];
  }
  if (a.fn.premul && a.deviceScalar == nullptr) k.scalarBits = kd::computeScalarBits(a.fn.dtype, a.fn.scalar);
  return cuda::launch(fn, dim3(1), dim3(kThreads), 0, s, k);
}

cudaError_t launchSmallAllReduce(const SmallAllReduceArgs& a, cudaStream_t s) {
  SmallSeg one;
  one.send = a.send;
  one.recv = a.recv;
  one.count = a.count;
  return launchSmallAllReduceGroup(a, &one, 1, s);
}

}  // namespace coll::device
