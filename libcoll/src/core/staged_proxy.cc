// staged_proxy.cc — see staged_proxy.h.
#include "core/staged_proxy.h"

#include <pthread.h>

#include <atomic>
#include <chrono>

#include "core/comm.h"
#include "core/device_staged.h"
#include "cuda_status.h"
#include "util/log.h"

namespace coll::core {

using p2p::cudaStatus;

namespace {

void bump(unsigned long long& w) {
  std::atomic_ref<unsigned long long> a(w);
  a.store(a.load(std::memory_order_relaxed) + 1, std::memory_order_release);  // one writer per word
}

double usSince(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t).count();
}

}  // namespace

void CUDART_CB postStagedCall(void* arg) {
  const auto* p = static_cast<const StagedPost*>(arg);
  bump(p->call->control()->posted);  // before the proxy can finish it: done never passes posted
  p->proxy->post(p);
}

StagedProxy::StagedProxy(collComm* comm) : comm_(comm) {
  thread_ = std::thread([this] { run(); });
  pthread_setname_np(thread_.native_handle(), "coll-proxy");
}

StagedProxy::~StagedProxy() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  thread_.join();
  for (size_t i = 0; i < kStagedSlots; ++i) {
    if (copiedIn_[i] != nullptr) (void)cudaEventDestroy(copiedIn_[i]);
    if (copiedOut_[i] != nullptr) (void)cudaEventDestroy(copiedOut_[i]);
  }
  if (finished_ != nullptr) (void)cudaEventDestroy(finished_);
  if (stream_ != nullptr) (void)cudaStreamDestroy(stream_);
}

void StagedProxy::post(const StagedPost* p) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    queue_.push_back({p, std::chrono::steady_clock::now()});
  }
  cv_.notify_all();
}

void StagedProxy::wake() {
  { std::lock_guard<std::mutex> lock(mu_); }
  cv_.notify_all();
}

bool StagedProxy::commFailed() const {
  return comm_->aborted.load(std::memory_order_relaxed) ||
         comm_->asyncError.load(std::memory_order_relaxed) != collSuccess;
}

Status StagedProxy::prepare(int device) {
  std::lock_guard<std::mutex> lock(mu_);
  if (stream_ != nullptr) {
    if (device == device_) return Status::ok();
    return makeError(collInvalidUsage, "host-staged path: a call on GPU {} after calls on GPU {} (one GPU per "
                     "communicator)", device, device_);
  }
  // Blocking-sync events: the proxy sleeps in its waits.  The stream last:
  // once it exists, everything else does.
  const unsigned flags = cudaEventDisableTiming | cudaEventBlockingSync;
  for (size_t i = 0; i < kStagedSlots; ++i) {
    if (copiedIn_[i] == nullptr)
      COLL_CHECK(cudaStatus(cudaEventCreateWithFlags(&copiedIn_[i], flags), "cudaEventCreate"));
    if (copiedOut_[i] == nullptr)
      COLL_CHECK(cudaStatus(cudaEventCreateWithFlags(&copiedOut_[i], flags), "cudaEventCreate"));
  }
  if (finished_ == nullptr) COLL_CHECK(cudaStatus(cudaEventCreateWithFlags(&finished_, flags), "cudaEventCreate"));
  COLL_CHECK(cudaStatus(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking), "cudaStreamCreate (staging proxy)"));
  device_ = device;
  return Status::ok();
}

Status StagedProxy::enterDevice() {
  if (entered_) return Status::ok();
  COLL_CHECK(cudaStatus(cudaSetDevice(device_), "cudaSetDevice (staging proxy)"));
  // A capture in Global mode on another thread must not forbid this
  // thread's copies and waits (they are on streams no graph captures).
  cudaStreamCaptureMode mode = cudaStreamCaptureModeRelaxed;
  COLL_CHECK(cudaStatus(cudaThreadExchangeStreamCaptureMode(&mode), "cudaThreadExchangeStreamCaptureMode"));
  entered_ = true;
  return Status::ok();
}

// Piece k+1 is copied in while piece k's host call runs; piece k's copy back
// is queued right after its host call.  A slot takes its next piece once
// its previous piece's copy back is done.
Status StagedProxy::runPieces(const StagedCall& call, CallTimes* t) {
  COLL_CHECK(enterDevice());
  const size_t nslots = call.slots.size();
  for (const StagedScalarCopy& c : call.scalarCopies)
    COLL_CHECK(cudaStatus(cudaMemcpyAsync(c.to, c.from, c.bytes, cudaMemcpyDeviceToHost, stream_),
                          "cudaMemcpyAsync of the pre-mul scalar to staging"));
  auto copyIn = [&](size_t k) -> Status {
    const size_t slot = call.slotOf(k);
    if (k >= nslots) COLL_CHECK(cudaStatus(cudaEventSynchronize(copiedOut_[slot]), "cudaEventSynchronize"));
    COLL_CHECK(call.enqueueCopies(k, true, stream_));
    return cudaStatus(cudaEventRecord(copiedIn_[slot], stream_), "cudaEventRecord");
  };
  COLL_CHECK(copyIn(0));
  for (size_t k = 0; k < call.pieces; ++k) {
    if (k + 1 < call.pieces) COLL_CHECK(copyIn(k + 1));
    const size_t slot = call.slotOf(k);
    auto t0 = std::chrono::steady_clock::now();
    COLL_CHECK(cudaStatus(cudaEventSynchronize(copiedIn_[slot]), "cudaEventSynchronize"));
    t->waitIn += usSince(t0);
    if (commFailed()) return Status::ok();  // failed elsewhere: the rest is not run
    t0 = std::chrono::steady_clock::now();
    const std::vector<OpRequest> reqs = call.hostRequests(k);
    if (reqs.size() == 1) {
      COLL_CHECK(runHostNow(comm_, reqs[0]));
    } else {  // a group's send/recv: one host group
      (void)groupStart();
      Status s = Status::ok();
      for (const OpRequest& r : reqs) {
        s = queueHostNow(comm_, r);
        if (!s.isOk()) break;
      }
      Status end = groupEnd();
      COLL_CHECK(s);
      COLL_CHECK(end);
    }
    t->host += usSince(t0);
    COLL_CHECK(call.enqueueCopies(k, false, stream_));
    COLL_CHECK(cudaStatus(cudaEventRecord(copiedOut_[slot], stream_), "cudaEventRecord"));
  }
  return Status::ok();
}

void StagedProxy::runCall(const StagedCall& call) {
  if (commFailed()) return;  // finished unrun
  const auto start = std::chrono::steady_clock::now();
  CallTimes t;
  Status s = runPieces(call, &t);
  // No copy of this call may still run once it is marked done (the stream
  // then frees its slots).
  if (stream_ != nullptr) {
    Status synced = cudaStatus(cudaEventRecord(finished_, stream_), "cudaEventRecord");
    if (synced.isOk()) synced = cudaStatus(cudaEventSynchronize(finished_), "cudaEventSynchronize (staging proxy)");
    if (!synced.isOk()) (void)cudaStreamSynchronize(stream_);  // whatever it costs: no copy may outlive the call
    if (s.isOk()) s = synced;
  }
  COLL_LOG(Trace, kColl, comm_->rank, "staged call of {} piece(s): {:.0f} us (waits for copies in {:.0f} us, host "
           "calls {:.0f} us)", call.pieces, usSince(start), t.waitIn, t.host);
  if (!s.isOk()) {
    // The stream's result is lost whatever the error, and nobody waits on
    // this call's status: collCommGetAsyncError and the next call must
    // report it, and the peers must hear of it (a CUDA error here tells
    // them nothing by itself).
    failStaged(comm_, s);
  }
}

void StagedProxy::run() {
  std::unique_lock<std::mutex> lock(mu_);
  for (;;) {
    cv_.wait(lock, [this] { return stop_ || !queue_.empty(); });
    if (stop_) return;
    const StagedPost* p = queue_.front().post;
    const double queued = usSince(queue_.front().at);
    queue_.pop_front();
    lock.unlock();
    COLL_LOG(Trace, kColl, comm_->rank, "staged call taken {:.0f} us after its post", queued);
    runCall(*p->call);
    lock.lock();
    // Once the stream sees this, it may free the call.
    bump(p->call->control()->done);
  }
}

}  // namespace coll::core
