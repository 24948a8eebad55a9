// ll_allreduce.cu — see ll_allreduce.h.  The element math is the reduction
// kernels' one<>() (kernels/cuda/src/reduce_impl.cuh), in the order of the
// flag-based kernel, so the bits equal the generic path's and the host's.
#include <cstring>

#include "coll/block_shared.h"
#include "device/ll_allreduce.h"
#include "device/one_launch_common.cuh"
#include "p2p/ll_line.cuh"

namespace coll::device {
namespace {

namespace kd = coll::kernels::device;
using kernels::DType;
using kernels::Op;
using p2p::llLoad;
using p2p::llStore;

constexpr unsigned kThreads = 256;

struct KernelArgs {
  SmallAllReduceArgs a;
  uint64_t scalarBits;  // host pre-mul scalar in the compute type
};

// Elements travel in units of whole lines: one 4-byte line holds 4 / size
// elements of a small type; an 8-byte element takes two lines.
template <class S>
struct Unit {
  static constexpr int kBytes = sizeof(S) >= 4 ? static_cast<int>(sizeof(S)) : 4;
  static constexpr int kLines = kBytes / 4;
  static constexpr int kElems = kBytes / static_cast<int>(sizeof(S));
};

template <DType D, Op O>
__global__ void __launch_bounds__(kThreads) llAllReduceKernel(KernelArgs k) {
  using E = kd::Elem<D>;
  using S = typename E::S;
  using C = typename E::C;
  using U = Unit<S>;
  const SmallAllReduceArgs& a = k.a;
  COLL_SHARED(unsigned long long, target);
  COLL_SHARED(p2p::StuckRanks, stuck);
  if (threadIdx.x == 0) {
    target = atomicAdd(a.counter, 1ull) + 1;
    p2p::clearStuck(stuck);
    p2p::announceCall(a.flags[a.rank], a.sig);
  }
  __syncthreads();
  const unsigned epoch = p2p::llEpoch(target);
  const size_t bufOff = (target & 1) * a.slotBytes;
  auto lines = [&](int r) { return reinterpret_cast<unsigned long long*>(a.slots[r] + bufOff); };
  const size_t units = (a.count + U::kElems - 1) / U::kElems;

  // 1. Header (the signature) and payload: mine = pre(send), as lines.
  unsigned long long* mine = lines(a.rank);
  p2p::llEpochStart(a.flags[a.rank], target, mine, kLlSlotBytes / 8);
  for (unsigned t = threadIdx.x; t < kLlHeaderLines; t += blockDim.x) {  // (a loop: any block size)
    const unsigned long long w = t < 2 ? a.sig.word : a.sig.count;
    llStore(mine + t, static_cast<unsigned>(t % 2 == 0 ? w : w >> 32), epoch);
  }
  const kd::Ctx<C> stage = stageContext<D>(a, k.scalarBits);
  const S* send = static_cast<const S*>(a.send);
  for (size_t u = threadIdx.x; u < units; u += blockDim.x) {
    S e[U::kElems];
    for (int j = 0; j < U::kElems; ++j) {
      const size_t i = u * U::kElems + j;
      e[j] = i < a.count ? kd::one<D, O, false>(S{}, send[i], stage) : S{};
    }
    unsigned w[U::kLines];
    memcpy(w, e, sizeof w);
    for (int l = 0; l < U::kLines; ++l) llStore(mine + kLlHeaderLines + u * U::kLines + l, w[l], epoch);
  }

  // 2. Every rank's header: it has arrived, with which call.
  const unsigned long long start = p2p::globalNs();
  bool failed = false;  // this thread's ranks; the block's: __syncthreads_or below
  for (int r = threadIdx.x; r < a.nranks; r += blockDim.x) {
    if (r == a.rank) continue;
    unsigned h[kLlHeaderLines];
    bool arrived = true;
    const p2p::LlPeerCheck check{a.flags[r], r, a.sig, a.flags[a.rank]};  // in this call in another kernel?
    for (size_t l = 0; l < kLlHeaderLines && arrived; ++l)
      arrived = llLoad(lines(r) + l, epoch, start, a.timeoutNs, a.error, &h[l], &check);
    if (!arrived) {
      p2p::markStuck(stuck, r);
      failed = true;
      continue;
    }
    const unsigned long long word = h[0] | static_cast<unsigned long long>(h[1]) << 32;
    const unsigned long long count = h[2] | static_cast<unsigned long long>(h[3]) << 32;
    if (a.sig.word != 0 && (word != a.sig.word || count != a.sig.count)) {
      p2p::recordMismatch(a.flags[a.rank], a.error, r, a.sig, word, count);
      failed = true;
    }
  }
  const bool blockFailed = __syncthreads_or(failed) != 0;
  if (threadIdx.x == 0) p2p::recordTimeout(a.flags[a.rank], a.error, stuck);
  // A rank that timed out or met different arguments writes nothing; nor
  // does a reduce's non-root (recv == nullptr).
  if (blockFailed || a.recv == nullptr) return;

  // 3. recv = post(((s0 op s1) op s2) ...), rounded after each step.
  kd::Ctx<C> step{};
  step.hasA = true;
  step.d = a.fn.divisor;
  S* recv = static_cast<S*>(a.recv);
  for (size_t u = threadIdx.x; u < units; u += blockDim.x) {
    S acc[U::kElems];
    for (int r = 0; r < a.nranks; ++r) {
      unsigned w[U::kLines];
      for (int l = 0; l < U::kLines; ++l) {
        if (!llLoad(lines(r) + kLlHeaderLines + u * U::kLines + l, epoch, start, a.timeoutNs, a.error, &w[l])) {
          p2p::recordTimeoutOf(a.flags[a.rank], a.error, r);
          return;
        }
      }
      S e[U::kElems];
      memcpy(e, w, sizeof e);
      for (int j = 0; j < U::kElems; ++j) {
        if (r == 0) {
          acc[j] = e[j];
          if (a.nranks == 1) {
            step.hasA = false;
            step.post = a.fn.divisor != 0;
            acc[j] = kd::one<D, O, false>(S{}, acc[j], step);
          }
        } else {
          step.post = r == a.nranks - 1 && a.fn.divisor != 0;
          acc[j] = kd::one<D, O, false>(acc[j], e[j], step);
        }
      }
    }
    for (int j = 0; j < U::kElems; ++j) {
      const size_t i = u * U::kElems + j;
      if (i < a.count) recv[i] = acc[j];
    }
  }
}

template <DType D, Op O>
struct LlKernel {
  static auto kernel() { return &llAllReduceKernel<D, O>; }
};

}  // namespace

cudaError_t loadLlAllReduceKernels() { return loadOneLaunchKernels<LlKernel>(); }

cudaError_t launchLlAllReduce(const SmallAllReduceArgs& a, cudaStream_t s) {
  const auto fn = oneLaunchKernel<LlKernel>(a.fn.dtype, a.fn.op);
  if (fn == nullptr || a.count * kernels::dtypeSize(a.fn.dtype) > kLlMaxBytes || a.slotBytes < kLlSlotBytes)
    return cudaErrorInvalidValue;
  KernelArgs k{a, 0};
  if (a.fn.premul && a.deviceScalar == nullptr) k.scalarBits = kd::computeScalarBits(a.fn.dtype, a.fn.scalar);
  return cuda::launch(fn, dim3(1), dim3(kThreads), 0, s, k);
}

}  // namespace coll::device
