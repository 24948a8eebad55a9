// device_staged.cc — see device_staged.h.
#include "device/entry/device_staged.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstring>
#include <memory>
#include <mutex>
#include <thread>

#include "core/buffer_kind.h"
#include "core/comm.h"
#include "device/entry/staged_call.h"
#include "device/entry/staged_proxy.h"
#include "p2p/cuda_status.h"
#include "device/current_device.h"
#include "device/stream_order.h"
#include "schedule/staged_pieces.h"
#include "coll/base/settings.h"
#include "coll/base/log.h"

namespace coll::core {

using p2p::cudaStatus;

static_assert(kStagedSlots == static_cast<size_t>(device::kStagedMaxSlots));

// Pinned, host-mapped memory for one slot, reused once the call that had it
// has copied its last result back.
struct PinnedBuffer {
  void* data = nullptr;
  size_t bytes = 0;
  std::atomic<bool> busy{false};
};

// A communicator's staged-path state, made at its first staged call.
struct StagedState {
  std::mutex mu;
  std::vector<std::unique_ptr<PinnedBuffer>> buffers;
  std::vector<StagedCall*> kept;     // calls the stream may run again (captured) or still names (abandoned)
  std::vector<StagedCall*> running;  // queued once, freed by sweep() once their kernel released them
  std::unique_ptr<StagedProxy> proxy;
  // The calls in call order across streams: the proxy runs them in the
  // order their streams reach them, which must be the same on every rank.
  device::StreamOrder order;
  // The device of the calls (the buffers'), for teardown's synchronize.
  std::atomic<int> device{-1};
  // The pool's pinned bytes, and the most it grows to while running calls
  // can give buffers back (COLL_STAGED_POOL_BYTES).  It never shrinks:
  // cudaFreeHost would synchronize the device from the caller's thread,
  // behind work that may wait for the caller.
  size_t pooled = 0;
  size_t limit = 0;

  // Frees the running calls the stream is done with (StagedSlotControl::
  // released: the kernel's last access), their slots back to the pool.
  // At every staged call, before it takes slots.
  void sweep() {
    std::lock_guard<std::mutex> lock(mu);
    std::erase_if(running, [](StagedCall* c) {
      for (int b = 0; b < c->blocks(); ++b) {
        std::atomic_ref<unsigned long long> released(c->control()->released[b]);
        if (released.load(std::memory_order_acquire) == 0) return false;
      }
      for (PinnedBuffer* b : c->buffers) b->busy.store(false, std::memory_order_release);
      delete c;
      return true;
    });
  }

  // n free buffers of at least `bytes` each, marked busy, into *out (true);
  // false (nothing taken) when some are missing, growing by them would pass
  // `limit`, and running calls hold enough such buffers to give back: the
  // caller sweeps and tries again.  Buffers that captured calls keep never
  // come back, so for want of returning ones the pool grows past the limit.
  Result<bool> tryAcquire(size_t n, size_t bytes, std::vector<PinnedBuffer*>* out) {
    std::lock_guard<std::mutex> lock(mu);
    std::vector<PinnedBuffer*> got;
    for (auto& b : buffers)
      if (got.size() < n && !b->busy.load(std::memory_order_acquire) && b->bytes >= bytes) got.push_back(b.get());
    const size_t missing = n - got.size(), cap = classBytes(bytes);
    if (missing > 0 && pooled + missing * cap > limit) {
      size_t returning = 0;
      for (const StagedCall* c : running)
        for (const PinnedBuffer* b : c->buffers) returning += b->bytes >= bytes ? 1 : 0;
      if (returning >= missing) return false;
    }
    for (size_t i = 0; i < missing; ++i) {
      auto b = allocate(cap);
      COLL_CHECK(b.status());  // nothing taken yet (the new ones stay pooled, free)
      got.push_back(b.value());
    }
    for (PinnedBuffer* b : got) b->busy = true;
    *out = std::move(got);
    return true;
  }

  size_t pooledBytes() {
    std::lock_guard<std::mutex> lock(mu);
    return pooled;
  }

 private:
  // Slot buffers come in powers of two from 64 KiB to 1 MiB, then in
  // whole MiB: a default slot (a 4 MiB piece in and out, and its header)
  // takes 9 MiB, not 16.
  static size_t classBytes(size_t bytes) {
    constexpr size_t kMiB = size_t{1} << 20;
    if (bytes > kMiB) return (bytes + kMiB - 1) / kMiB * kMiB;
    size_t cap = 64 << 10;
    while (cap < bytes) cap *= 2;
    return cap;
  }

  // A new pooled buffer of `cap` bytes (mu held), not yet busy.
  Result<PinnedBuffer*> allocate(size_t cap) {
    auto b = std::make_unique<PinnedBuffer>();
    // The caller may be capturing its stream into a graph: in Global or
    // ThreadLocal mode cudaHostAlloc is an unsafe call there, which fails
    // and invalidates the capture.  This thread goes Relaxed for the call
    // (the memory is ours, not the graph's), then back to its mode.
    cudaStreamCaptureMode mode = cudaStreamCaptureModeRelaxed;
    const bool swapped = cudaThreadExchangeStreamCaptureMode(&mode) == cudaSuccess;
    cudaError_t e = cudaHostAlloc(&b->data, cap, cudaHostAllocPortable | cudaHostAllocMapped);
    if (swapped) (void)cudaThreadExchangeStreamCaptureMode(&mode);
    if (e != cudaSuccess)
      return makeError(collUnhandledCudaError, "cudaHostAlloc of {} B of staging: {}", cap, cudaGetErrorString(e));
    b->bytes = cap;
    pooled += cap;
    buffers.push_back(std::move(b));
    return buffers.back().get();
  }

 public:
  // The proxy first (it reads the calls), then the calls, then the memory.
  ~StagedState() {
    proxy.reset();
    for (StagedCall* c : kept) delete c;
    for (StagedCall* c : running) delete c;
    for (auto& b : buffers) (void)cudaFreeHost(b->data);
  }
};

std::vector<OpRequest> StagedCall::hostRequests(size_t piece) const {
  std::vector<OpRequest> out;
  unsigned char* slot = slots[slotOf(piece)];
  for (const StagedOp& op : ops) {
    if (piece >= op.pieces) continue;  // this op is done
    OpRequest h = op.request;
    h.count = sched::stagedPiece(op.request.count, op.pieceElems, piece).count;
    if (op.inBlocks > 0) h.sendbuf = slot + op.inOffset;
    if (op.outBlocks > 0) h.recvbuf = slot + op.outOffset;
    if (op.scalarAt != nullptr) h.scalarAt = op.scalarAt;
    out.push_back(h);
  }
  return out;
}

namespace {

size_t align256(size_t b) { return (b + 255) & ~size_t{255}; }

// The most pinned memory a communicator's staged pool grows to while
// earlier calls can give slots back (COLL_STAGED_POOL_BYTES).
Result<size_t> poolLimit() { return settings::bytesOr("COLL_STAGED_POOL_BYTES"); }

// n slots of at least `bytes` for a call.  With the pool at its limit the
// caller waits for earlier calls to give theirs back (the proxy and their
// streams finish them without this thread), within the communicator's
// timeout; an abort ends the wait.
Status takeSlots(collComm* comm, StagedState& st, size_t n, size_t bytes, std::vector<PinnedBuffer*>* out) {
  if (st.limit == 0) {
    auto limit = poolLimit();
    COLL_CHECK(limit.status());
    st.limit = limit.value();
  }
  const auto start = std::chrono::steady_clock::now();
  bool told = false;
  for (auto nap = std::chrono::microseconds(20);; nap = std::min(nap * 2, std::chrono::microseconds(2000))) {
    auto got = st.tryAcquire(n, bytes, out);
    COLL_CHECK(got.status());
    if (got.value()) return Status::ok();
    if (comm->aborted.load()) return makeError(collAborted, "communicator aborted while waiting for staging slots");
    const auto waited = std::chrono::steady_clock::now() - start;
    if (comm->timeoutMs > 0 && waited > std::chrono::milliseconds(comm->timeoutMs))
      return makeError(collTimeout, "the host-staged path's pinned pool is full (COLL_STAGED_POOL_BYTES={} B, {} B "
                       "pooled) and the calls holding it did not finish within the timeout ({} ms)", st.limit,
                       st.pooledBytes(), comm->timeoutMs);
    if (!told) {
      COLL_LOG(Info, kColl, comm->rank, "host-staged path: pinned pool at its limit ({} B); waiting for earlier "
               "calls to give slots back", st.limit);
      told = true;
    }
    std::this_thread::sleep_for(nap);
    st.sweep();
  }
}

StagedState& stagedState(collComm* comm) {
  if (!comm->staged) {
    comm->staged = std::make_shared<StagedState>();
    comm->staged->proxy = std::make_unique<StagedProxy>(comm);
    COLL_LOG(Info, kInit, comm->rank, "host-staged device path: pieces of at most {} B through {} pinned slots per "
             "call, run by a proxy thread; the kernel copies with a block per {} B of a piece (at most {})",
             comm->stagedPieceBytes, kStagedSlots, comm->stagedBlockBytes, device::kStagedMaxBlocks);
  }
  return *comm->staged;
}

}  // namespace

namespace {

Status enqueueStagedCall(collComm* comm, const std::vector<OpRequest>& reqs, cudaStream_t stream) {
  StagedState& st = stagedState(comm);
  st.sweep();
  cudaStreamCaptureStatus capture = cudaStreamCaptureStatusNone;
  COLL_CHECK(cudaStatus(cudaStreamIsCapturing(stream, &capture), "cudaStreamIsCapturing"));
  // The device of the user's buffers: the call's kernel runs there.
  // (No buffer at all, a count-0 call: the caller's current device.)
  int device = -1;
  for (const OpRequest& r : reqs) {
    const void* p = r.sendbuf != nullptr ? r.sendbuf : r.recvbuf;
    if (p != nullptr) {
      device = std::max(0, bufferKind(p).device);
      break;
    }
  }
  if (device < 0) COLL_CHECK(cudaStatus(cudaGetDevice(&device), "cudaGetDevice"));
  // One GPU per communicator, as on the IPC path (teardown synchronizes it).
  if (int first = -1; !st.device.compare_exchange_strong(first, device) && first != device)
    return makeError(collInvalidArgument, "{}: the buffers are on GPU {} but this communicator's device collectives "
                     "run on GPU {} (its first device call's)", reqs.front().api, device, first);
  const device::CurrentDevice onDevice(device);
  COLL_CHECK(onDevice.status());

  // The ops, their pieces, and where each lives in a slot.
  auto owned = std::make_unique<StagedCall>();
  StagedCall& call = *owned;
  call.pieces = 0;
  size_t slotBytes = stagedHeaderBytes(reqs.size());
  size_t largestSide = 0;  // a piece's, of any op: sets the kernel's blocks
  for (const OpRequest& r : reqs) {
    StagedOp op;
    op.request = r;
    op.request.stream = nullptr;  // what the host executor runs: host buffers
    // op.request.preMul (validate()'s look-up) is the op as the API took
    // it: the proxy runs the call later, after the caller may have
    // destroyed it (or made another under its handle).
    const size_t es = kernels::dtypeSize(static_cast<kernels::DType>(r.dtype));
    op.pieceElems = sched::stagedPieceElems(r.kind, es, comm->nranks, comm->stagedPieceBytes);
    op.pieces = sched::stagedPieceCount(r.count, op.pieceElems);
    const Ranges g = rangesOf(r, comm->rank, comm->nranks);
    op.inBlocks = g.inElems == 0 ? 0 : r.kind == sched::CollKind::ReduceScatter ? comm->nranks : 1;
    op.outBlocks = g.outElems == 0 ? 0 : r.kind == sched::CollKind::AllGather ? comm->nranks : 1;
    const size_t pieceBytes = std::min(r.count, op.pieceElems) * es;
    largestSide = std::max(largestSide, pieceBytes * size_t(std::max(op.inBlocks, op.outBlocks)));
    op.inOffset = slotBytes;
    slotBytes += align256(size_t(op.inBlocks) * pieceBytes);
    op.outOffset = slotBytes;
    slotBytes += align256(size_t(op.outBlocks) * pieceBytes);
    call.pieces = std::max(call.pieces, op.pieces);
    call.ops.push_back(op);
  }

  // Every slot before any stream operation: a failure here leaves nothing
  // queued.
  auto giveBack = [&] {
    for (PinnedBuffer* b : call.buffers) b->busy = false;
  };
  const size_t nslots = std::min(kStagedSlots, call.pieces);
  COLL_CHECK(takeSlots(comm, st, nslots, slotBytes, &call.buffers));
  for (PinnedBuffer* b : call.buffers) call.slots.push_back(static_cast<unsigned char*>(b->data));
  std::memset(call.slots[0], 0, sizeof(device::StagedSlotControl));  // no stream or proxy uses this slot now
  device::StagedKernelArgs& k = call.kernel;
  for (size_t i = 0; i < call.slots.size(); ++i) {
    void* dev = nullptr;
    Status got = cudaStatus(cudaHostGetDevicePointer(&dev, call.slots[i], 0), "cudaHostGetDevicePointer of staging");
    if (!got.isOk()) {
      giveBack();
      return got;
    }
    k.slots[i] = static_cast<unsigned char*>(dev);
  }
  k.nslots = static_cast<int>(call.slots.size());
  k.control = reinterpret_cast<device::StagedSlotControl*>(k.slots[0]);
  k.ops = reinterpret_cast<const device::StagedOpDesc*>(k.slots[0] + kStagedOpsOffset);
  k.nops = static_cast<int>(call.ops.size());
  k.pieces = call.pieces;
  k.blocks = sched::stagedBlocks(largestSide, comm->stagedBlockBytes, device::kStagedMaxBlocks);
  call.post = StagedPost{st.proxy.get(), &call};
  call.device = device;

  // The ops as the kernel reads them (slot 0's header), and the device
  // pre-mul scalars it copies there before the first piece (the stream has
  // reached the call then, so a kernel before it that writes one is done).
  auto* descs = reinterpret_cast<device::StagedOpDesc*>(call.slots[0] + kStagedOpsOffset);
  for (size_t j = 0; j < call.ops.size(); ++j) {
    StagedOp& op = call.ops[j];
    const size_t es = kernels::dtypeSize(static_cast<kernels::DType>(op.request.dtype));
    device::StagedOpDesc d{};
    d.send = static_cast<const unsigned char*>(op.request.sendbuf);
    d.recv = static_cast<unsigned char*>(op.request.recvbuf);
    d.count = op.request.count;
    d.pieceElems = op.pieceElems;
    d.pieces = op.pieces;
    d.inOffset = op.inOffset;
    d.outOffset = op.outOffset;
    d.inBlocks = static_cast<unsigned>(op.inBlocks);
    d.outBlocks = static_cast<unsigned>(op.outBlocks);
    d.elemSize = es;
    std::memcpy(descs + j, &d, sizeof d);
    const std::optional<RedOpTable::Entry>& e = op.request.preMul;
    if (!e || e->residence != collScalarDevice) continue;
    if (j >= static_cast<size_t>(device::kStagedMaxScalars)) {
      giveBack();
      return makeError(collInternalError, "host-staged path: too many device pre-mul scalars in one call");
    }
    op.scalarAt = call.slots[0] + kStagedScalarOffset + 8 * j;
    device::StagedScalarDesc& sc = k.scalars[k.nscalars++];
    sc.toOffset = kStagedScalarOffset + 8 * j;
    sc.from = e->pointer;
    sc.bytes = es;
  }

  // From here the stream (and then the proxy) names the call: it is theirs
  // until its kernel releases it (sweep).  Two stream operations,
  // however many pieces (staged_call.h says why).
  const bool persistent = capture != cudaStreamCaptureStatusNone;  // a graph may run it again: kept until teardown
  StagedCall* raw = owned.release();
  size_t queued = 0;
  auto enqueue = [&](cudaError_t e, const char* what) {
    Status s = cudaStatus(e, what);
    if (s.isOk()) ++queued;
    return s;
  };
  // Nothing queued if before() fails: the call is taken back below.
  Status s = st.order.ordered(stream, [&] {
    Status q = enqueue(cudaLaunchHostFunc(stream, postStagedCall, &raw->post), "cudaLaunchHostFunc");
    if (q.isOk()) q = enqueue(device::launchStagedCall(raw->kernel, stream), "the staged call's kernel launch");
    return q;
  });
  if (s.isOk()) {
    std::lock_guard<std::mutex> lock(st.mu);
    (persistent ? st.kept : st.running).push_back(raw);
    return Status::ok();
  }
  if (queued == 0) {  // nothing names the call: take it back
    for (PinnedBuffer* b : raw->buffers) b->busy = false;
    delete raw;
    return s;
  }
  // Half-enqueued: the stream names the call (the proxy may run it).  Keep
  // it until teardown and fail the communicator, which makes the proxy
  // finish it unrun.
  {
    std::lock_guard<std::mutex> lock(st.mu);
    st.kept.push_back(raw);
  }
  failStaged(comm, s);  // the proxy finishes it unrun (its waits look at the communicator)
  return s;
}

}  // namespace

void failStaged(collComm* comm, const Status& s) {
  int expected = collSuccess;
  const bool first = comm->asyncError.compare_exchange_strong(expected, s.code());
  (void)fail(comm, s);  // the message collGetLastError reports
  if (first && comm->transport) comm->transport->notifyPeers("failed on the host-staged device path: " + s.message());
}

Status enqueueStaged(collComm* comm, const std::vector<OpRequest>& reqs, cudaStream_t stream) {
  Status s = enqueueStagedCall(comm, reqs, stream);
  // The call was validated: its peers take part in it whatever happens
  // here, and this rank now will not (or not surely).  Fail the
  // communicator and tell them, so that they stop at once instead of
  // waiting for this rank until their timeout.
  if (!s.isOk()) failStaged(comm, s);
  return s;
}

Status joinStagedStreams(collComm* comm, const std::vector<cudaStream_t>& streams) {
  if (!comm->staged) return Status::ok();
  return comm->staged->order.join(streams);
}

void releaseStaging(collComm* comm) {
  if (!comm->staged) return;
  // Every call done first, on the calls' device (which need not be the
  // current one): their kernels end once the proxy, still running,
  // finished them; then nothing reads the slots the state frees.
  if (const int device = comm->staged->device.load(); device >= 0) {
    const device::CurrentDevice on(device);
    if (on.status().isOk()) (void)cudaDeviceSynchronize();
  }
  comm->staged.reset();
}

}  // namespace coll::core
