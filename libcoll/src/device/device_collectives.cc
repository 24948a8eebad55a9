// device_collectives.cc — each collective as stream operations over the
// staging regions (see device_comm.h).  Large buffers go in pieces of at most
// one region.  Bytes each rank moves through memory per piece of S bytes
// (reads + writes; docs/PERFORMANCE.md uses these for the bandwidth bound):
//   all-reduce, large:  stage-in 2S, reduce its slice (N-1)·3S/N, gather 2S
//   all-reduce, <= 32 KiB (one launch, small_allreduce.cu): stage-in 2S,
//                       reduce all N·S read + S written; over LL
//                       (ll_allreduce.cu, <= COLL_DEVICE_LL_BYTES): lines
//                       of twice the payload, written 2S, read 2N·S
//   all-reduce, <= 256 KiB (one-shot): stage-in 2S, reduce all (N-1)·3S
//   all-gather:         stage-in 2s (own block of s = S/N), gather 2S
//   broadcast:          root 2S (+2S out of place), others 2S
//   reduce-scatter:     stage-in 2S, reduce its block (N-1)·3S/N
//   reduce:             stage-in 2S, root (N-1)·3S
#include <algorithm>

#include "coll/device_reduce.h"
#include "device/device_comm.h"
#include "schedule/device_program.h"

namespace coll::device {
namespace {

struct Slice {
  size_t begin, len;
};
// Rank r's part of `total` elements: the first total % n ranks get one more.
Slice sliceOf(size_t total, int n, int r) {
  const size_t q = total / n, rem = total % n, ur = static_cast<size_t>(r);
  return {ur * q + std::min(ur, rem), q + (ur < rem ? 1 : 0)};
}

}  // namespace

Status DeviceComm::allReduce(const DeviceOp& op) {
  const size_t es = kernels::dtypeSize(op.fn.dtype);
  const auto* send = static_cast<const char*>(op.send);
  auto* recv = static_cast<char*>(op.recv);
  if (p_.nranks == 1)
    return kernels::collDeviceReduce(op.fn, recv, nullptr, send, op.count, true, true, op.deviceScalar, op.stream) ==
                   cudaSuccess
               ? Status::ok()
               : makeError(collUnhandledCudaError, "device reduce launch failed");
  if (op.count * es <= kSmallSlotBytes) return oneLaunch(op, op.count * es);
  const size_t cap = p_.regionBytes / es;
  for (size_t off = 0; off < op.count;) {
    const size_t piece = std::min(cap, op.count - off);
    COLL_CHECK(stageIn(op, send + off * es, 0, piece));
    COLL_CHECK(barrier(op.stream));
    if (piece * es <= sched::kDeviceOneShotBytes) {  // one-shot: fewer launches and barriers beat the extra reads
      COLL_CHECK(reduceChain(recv + off * es, false, 0, piece, op.fn, op.stream));
    } else {
      const Slice mine = sliceOf(piece, p_.nranks, p_.rank);
      COLL_CHECK(reduceChain(result(p_.rank) + mine.begin * es, false, mine.begin, mine.len, op.fn, op.stream));
      COLL_CHECK(barrier(op.stream));
      for (int r = 0; r < p_.nranks; ++r) {
        const Slice s = sliceOf(piece, p_.nranks, r);
        COLL_CHECK(copy(recv + (off + s.begin) * es, result(r) + s.begin * es, s.len * es, op.stream));
      }
    }
    // Nobody refills a region while a peer may still read it.
    COLL_CHECK(barrier(op.stream));
    off += piece;
  }
  return Status::ok();
}

Status DeviceComm::allGather(const DeviceOp& op) {
  const size_t es = kernels::dtypeSize(op.fn.dtype);
  const auto* send = static_cast<const char*>(op.send);
  auto* recv = static_cast<char*>(op.recv);
  const size_t cap = p_.regionBytes / es, n = op.count;
  for (size_t off = 0; off < n;) {
    const size_t piece = std::min(cap, n - off);
    COLL_CHECK(copy(input(p_.rank), send + off * es, piece * es, op.stream));
    COLL_CHECK(barrier(op.stream));
    for (int r = 0; r < p_.nranks; ++r)
      COLL_CHECK(copy(recv + (static_cast<size_t>(r) * n + off) * es, input(r), piece * es, op.stream));
    COLL_CHECK(barrier(op.stream));
    off += piece;
  }
  return Status::ok();
}

Status DeviceComm::broadcast(const DeviceOp& op) {
  const size_t es = kernels::dtypeSize(op.fn.dtype);
  const auto* send = static_cast<const char*>(op.send);
  auto* recv = static_cast<char*>(op.recv);
  const bool root = p_.rank == op.root;
  const size_t cap = p_.regionBytes / es;
  for (size_t off = 0; off < op.count;) {
    const size_t piece = std::min(cap, op.count - off);
    if (root) COLL_CHECK(copy(input(p_.rank), send + off * es, piece * es, op.stream));
    COLL_CHECK(barrier(op.stream));
    COLL_CHECK(copy(recv + off * es, root ? send + off * es : input(op.root), piece * es, op.stream));
    COLL_CHECK(barrier(op.stream));
    off += piece;
  }
  return Status::ok();
}

Status DeviceComm::reduceScatter(const DeviceOp& op) {
  const size_t es = kernels::dtypeSize(op.fn.dtype);
  const auto* send = static_cast<const char*>(op.send);
  auto* recv = static_cast<char*>(op.recv);
  const size_t n = op.count;
  // The input region holds one piece of every rank's block.
  const size_t blockCap = p_.regionBytes / es / static_cast<size_t>(p_.nranks);
  if (blockCap == 0)
    return makeError(collInvalidUsage, "device reduce-scatter: the staging region ({} B) is smaller than {} elements",
                     p_.regionBytes, p_.nranks);
  for (size_t off = 0; off < n;) {
    const size_t piece = std::min(blockCap, n - off);
    if (!op.fn.premul) {
      // Every block's piece in one strided copy.
      cudaError_t e = cudaMemcpy2DAsync(input(p_.rank), piece * es, send + off * es, n * es, piece * es,
                                        static_cast<size_t>(p_.nranks), cudaMemcpyDeviceToDevice, op.stream);
      if (e != cudaSuccess) return makeError(collUnhandledCudaError, "cudaMemcpy2DAsync: {}", cudaGetErrorString(e));
    } else {
      for (int r = 0; r < p_.nranks; ++r)
        COLL_CHECK(stageIn(op, send + (static_cast<size_t>(r) * n + off) * es, static_cast<size_t>(r) * piece, piece));
    }
    COLL_CHECK(barrier(op.stream));
    COLL_CHECK(reduceChain(recv + off * es, false, static_cast<size_t>(p_.rank) * piece, piece, op.fn, op.stream));
    COLL_CHECK(barrier(op.stream));
    off += piece;
  }
  return Status::ok();
}

Status DeviceComm::reduce(const DeviceOp& op) {
  const size_t es = kernels::dtypeSize(op.fn.dtype);
  const auto* send = static_cast<const char*>(op.send);
  auto* recv = static_cast<char*>(op.recv);
  if (op.count * es <= kSmallSlotBytes) {
    // Only the root's recvbuff is significant (NULL is fine elsewhere).
    DeviceOp mine = op;
    if (p_.rank != op.root) mine.recv = nullptr;
    return oneLaunch(mine, op.count * es);
  }
  const size_t cap = p_.regionBytes / es;
  for (size_t off = 0; off < op.count;) {
    const size_t piece = std::min(cap, op.count - off);
    COLL_CHECK(stageIn(op, send + off * es, 0, piece));
    COLL_CHECK(barrier(op.stream));
    if (p_.rank == op.root) COLL_CHECK(reduceChain(recv + off * es, false, 0, piece, op.fn, op.stream));
    COLL_CHECK(barrier(op.stream));
    off += piece;
  }
  return Status::ok();
}

}  // namespace coll::device
