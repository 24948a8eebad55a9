// staged_proxy.cc — see staged_proxy.h.
#include "device/entry/staged_proxy.h"

#include <pthread.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <thread>

#include "core/comm.h"
#include "device/entry/device_staged.h"
#include "coll/base/log.h"

namespace coll::core {

namespace {

void storeWord(unsigned long long& w, unsigned long long v) {
  std::atomic_ref<unsigned long long>(w).store(v, std::memory_order_release);
}
unsigned long long loadWord(unsigned long long& w) {
  return std::atomic_ref<unsigned long long>(w).load(std::memory_order_acquire);
}

double usSince(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t).count();
}

}  // namespace

void CUDART_CB postStagedCall(void* arg) {
  const auto* p = static_cast<const StagedPost*>(arg);
  device::StagedSlotControl* c = p->call->control();
  // A new run: the last one's kernel is done (the stream reached this
  // host function after it), and so is its proxy (the kernel waited for it).
  for (unsigned long long& r : c->ready) storeWord(r, 0);
  storeWord(c->finished, 0);
  storeWord(c->skip, 0);
  storeWord(c->posted, loadWord(c->posted) + 1);  // one writer: the stream
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
}

void StagedProxy::post(const StagedPost* p) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    queue_.push_back({p, std::chrono::steady_clock::now()});
  }
  cv_.notify_all();
}

bool StagedProxy::commFailed() const {
  return comm_->aborted.load(std::memory_order_relaxed) ||
         comm_->asyncError.load(std::memory_order_relaxed) != collSuccess;
}

Result<bool> StagedProxy::awaitPiece(const StagedCall& call, size_t k) {
  unsigned long long* const ready = call.control()->ready;
  const int blocks = call.blocks();
  int in = 0;  // blocks seen done with piece k (each only counts up)
  auto allIn = [&] {
    while (in < blocks && loadWord(ready[in]) > k) ++in;
    return in == blocks;
  };
  if (allIn()) return true;  // a small piece: already there
  const auto start = std::chrono::steady_clock::now();
  for (auto nap = std::chrono::microseconds(2);; nap = std::min(nap * 2, std::chrono::microseconds(200))) {
    std::this_thread::sleep_for(nap);
    if (allIn()) return true;
    if (comm_->aborted.load()) return makeError(collAborted, "communicator aborted during a host-staged call");
    if (commFailed()) return false;
    const auto waited = std::chrono::steady_clock::now() - start;
    if (comm_->timeoutMs > 0 && waited > std::chrono::milliseconds(comm_->timeoutMs))
      return makeError(collTimeout, "rank {}: the host-staged call's kernel did not copy piece {} of {} in within {} "
                       "ms (COLL_TIMEOUT): its stream reached the call, but the GPU did not run the kernel",
                       comm_->rank, k + 1, call.pieces, comm_->timeoutMs);
  }
}

// The kernel copies piece k + 1 in while piece k's host call runs.  The
// last piece's `finished` lets the kernel end and the call be freed: after
// it nothing here reads the call (hence the copies of its fields).
Status StagedProxy::runPieces(const StagedCall& call, CallTimes* t, size_t* ran) {
  const size_t pieces = call.pieces;
  device::StagedSlotControl* const control = call.control();
  for (size_t k = 0; k < pieces; ++k) {
    auto t0 = std::chrono::steady_clock::now();
    auto in = awaitPiece(call, k);
    COLL_CHECK(in.status());
    t->waitIn += usSince(t0);
    if (!in.value() || commFailed()) return Status::ok();  // failed elsewhere: the rest is not run
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
    *ran = k + 1;
    storeWord(control->finished, k + 1);  // the kernel copies it back
  }
  return Status::ok();
}

void StagedProxy::runCall(const StagedCall& call) {
  const auto start = std::chrono::steady_clock::now();
  const size_t pieces = call.pieces;
  device::StagedSlotControl* const control = call.control();
  CallTimes t;
  size_t ran = 0;
  Status s = commFailed() ? Status::ok() : runPieces(call, &t, &ran);
  if (ran < pieces) {
    // Finished unrun: the kernel copies nothing back and ends (skip
    // before finished, which it reads first).
    storeWord(control->skip, 1);
    storeWord(control->finished, pieces);
  }
  // The call may be freed from here on.
  COLL_LOG(Trace, kColl, comm_->rank, "staged call of {} piece(s): {:.0f} us (waits for the kernel's copies in "
           "{:.0f} us, host calls {:.0f} us)", pieces, usSince(start), t.waitIn, t.host);
  if (!s.isOk()) {
    // The stream's result is lost whatever the error, and nobody waits on
    // this call's status: collCommGetAsyncError and the next call must
    // report it, and the peers must hear of it.
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
    runCall(*p->call);  // its last write lets the kernel end: the call may be freed after it
    lock.lock();
  }
}

}  // namespace coll::core
