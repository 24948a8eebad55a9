// device_staged.cc — see device_staged.h.
#include "core/device_staged.h"

#include <atomic>
#include <memory>
#include <mutex>

#include "core/comm.h"
#include "cuda_status.h"
#include "util/log.h"

namespace coll::core {

using p2p::cudaStatus;

// Pinned buffers, reused once the call's copies back from them have run.  A
// call captured into a CUDA graph keeps its buffers until teardown (the
// graph may replay).
struct PinnedBuffer {
  void* data = nullptr;
  size_t bytes = 0;
  std::atomic<bool> busy{false};
};

struct StagingPool {
  std::mutex mu;
  std::vector<std::unique_ptr<PinnedBuffer>> buffers;

  Result<PinnedBuffer*> acquire(size_t bytes) {
    std::lock_guard<std::mutex> lock(mu);
    for (auto& b : buffers) {
      bool expected = false;
      if (b->bytes >= bytes && b->busy.compare_exchange_strong(expected, true)) return b.get();
    }
    size_t cap = 64 << 10;
    while (cap < bytes) cap *= 2;
    auto b = std::make_unique<PinnedBuffer>();
    cudaError_t e = cudaHostAlloc(&b->data, cap, cudaHostAllocPortable);
    if (e != cudaSuccess)
      return makeError(collUnhandledCudaError, "cudaHostAlloc of {} B of staging: {}", cap, cudaGetErrorString(e));
    b->bytes = cap;
    b->busy = true;
    buffers.push_back(std::move(b));
    return buffers.back().get();
  }

  ~StagingPool() {
    for (auto& b : buffers) (void)cudaFreeHost(b->data);
  }
};

namespace {

struct StagedCall {
  collComm* comm = nullptr;
  std::vector<OpRequest> reqs;  // host pointers into the staging buffers
  std::vector<PinnedBuffer*> buffers;
  bool persistent = false;      // captured: the graph may run it again
};

// Runs on CUDA's callback thread: no CUDA calls here.
void CUDART_CB runStaged(void* arg) {
  auto* call = static_cast<StagedCall*>(arg);
  Status s = Status::ok();
  if (call->reqs.size() == 1) {
    s = runHostNow(call->comm, call->reqs[0]);
  } else {
    (void)groupStart();
    for (const OpRequest& r : call->reqs) {
      s = queueHostNow(call->comm, r);
      if (!s.isOk()) break;
    }
    Status end = groupEnd();
    if (s.isOk()) s = end;
  }
  if (!s.isOk()) fail(call->comm, s);  // collCommGetAsyncError and the next call report it
}

// After the copies back (stream order): the buffers may be reused, by a call
// on any stream.  Not for a captured call (the graph may replay).
void CUDART_CB finishStaged(void* arg) {
  auto* call = static_cast<StagedCall*>(arg);
  for (PinnedBuffer* b : call->buffers) b->busy = false;
  delete call;
}

}  // namespace

Status enqueueStaged(collComm* comm, const std::vector<OpRequest>& reqs, cudaStream_t stream) {
  if (!comm->staging) comm->staging = std::make_shared<StagingPool>();
  cudaStreamCaptureStatus capture = cudaStreamCaptureStatusNone;
  COLL_CHECK(cudaStatus(cudaStreamIsCapturing(stream, &capture), "cudaStreamIsCapturing"));
  auto call = std::make_unique<StagedCall>();
  call->comm = comm;
  call->persistent = capture != cudaStreamCaptureStatusNone;
  struct Back {
    void* dst;
    const void* src;
    size_t bytes;
  };
  std::vector<Back> copiesBack;
  auto release = [&] {
    for (PinnedBuffer* b : call->buffers) b->busy = false;
  };
  for (const OpRequest& r : reqs) {
    const size_t es = kernels::dtypeSize(static_cast<kernels::DType>(r.dtype));
    const Ranges g = rangesOf(r, comm->rank, comm->nranks);
    OpRequest h = r;
    h.stream = nullptr;
    // A pre-mul scalar in device memory: copied to pinned memory in stream
    // order (a kernel before the call may write it), read there by the host.
    const RedOpTable::Entry* e =
        r.op >= collNumOps ? comm->redops.find(static_cast<collRedOp_t>(r.op)) : nullptr;  // validated
    if (e != nullptr && e->residence == collScalarDevice) {
      auto b = comm->staging->acquire(es);
      if (!b.isOk()) {
        release();
        return b.status();
      }
      call->buffers.push_back(b.value());
      h.scalarAt = b.value()->data;
      Status s = cudaStatus(cudaMemcpyAsync(b.value()->data, e->pointer, es, cudaMemcpyDeviceToHost, stream),
                            "cudaMemcpyAsync of the pre-mul scalar to staging");
      if (!s.isOk()) {
        release();
        return s;
      }
    }
    if (g.inElems > 0) {
      auto b = comm->staging->acquire(g.inElems * es);
      if (!b.isOk()) {
        release();
        return b.status();
      }
      call->buffers.push_back(b.value());
      h.sendbuf = b.value()->data;
      Status s = cudaStatus(cudaMemcpyAsync(b.value()->data, r.sendbuf, g.inElems * es, cudaMemcpyDeviceToHost, stream),
                            "cudaMemcpyAsync to staging");
      if (!s.isOk()) {
        release();
        return s;
      }
    }
    if (g.outElems > 0) {
      auto b = comm->staging->acquire(g.outElems * es);
      if (!b.isOk()) {
        release();
        return b.status();
      }
      call->buffers.push_back(b.value());
      h.recvbuf = b.value()->data;
      copiesBack.push_back({r.recvbuf, b.value()->data, g.outElems * es});
    }
    call->reqs.push_back(h);
  }
  StagedCall* raw = call.get();
  const bool persistent = raw->persistent;  // (raw is not ours to read once the stream may run it)
  Status s = cudaStatus(cudaLaunchHostFunc(stream, runStaged, raw), "cudaLaunchHostFunc");
  if (!s.isOk()) {
    release();
    return s;
  }
  call.release();  // the stream owns it now: finishStaged frees it (or the graph holds it until teardown)
  if (persistent) {
    std::lock_guard<std::mutex> lock(comm->staging->mu);
    comm->stagedCaptured.push_back(raw);
  }
  for (const Back& c : copiesBack)
    if (s.isOk())
      s = cudaStatus(cudaMemcpyAsync(c.dst, c.src, c.bytes, cudaMemcpyHostToDevice, stream),
                     "cudaMemcpyAsync from staging");
  if (!persistent) {
    Status f = cudaStatus(cudaLaunchHostFunc(stream, finishStaged, raw), "cudaLaunchHostFunc");
    if (s.isOk()) s = f;
  }
  return s;
}

void releaseStaging(collComm* comm) {
  for (void* p : comm->stagedCaptured) delete static_cast<StagedCall*>(p);
  comm->stagedCaptured.clear();
  comm->staging.reset();
}

}  // namespace coll::core
