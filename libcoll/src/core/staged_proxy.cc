// staged_proxy.cc — see staged_proxy.h.
#include "core/staged_proxy.h"

#include <pthread.h>

#include <atomic>
#include <chrono>

#include "core/comm.h"

namespace coll::core {
namespace {

void bump(unsigned long long& w) {
  std::atomic_ref<unsigned long long> a(w);
  a.store(a.load(std::memory_order_relaxed) + 1, std::memory_order_release);  // one writer per word
}

}  // namespace

void CUDART_CB postStagedPiece(void* arg) {
  const auto* p = static_cast<const StagedPost*>(arg);
  bump(p->call->control(p->slot)->posted);  // before the proxy can finish it: done never passes posted
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
    queue_.push_back(p);
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

std::deque<const StagedPost*>::iterator StagedProxy::nextPost() {
  // No call under way (or the communicator failed, when pieces are only
  // finished unrun): the oldest post, a call's first piece.  Else the
  // current call's next piece; other calls' posts wait behind it.
  if (current_ == nullptr || commFailed()) return queue_.begin();
  for (auto it = queue_.begin(); it != queue_.end(); ++it)
    if ((*it)->call == current_) return it;
  return queue_.end();
}

void StagedProxy::run() {
  std::unique_lock<std::mutex> lock(mu_);
  for (;;) {
    auto it = queue_.end();
    // Mid-call, polled now and then: a failure recorded by another thread
    // (abort, an abandoned call) must end a wait for pieces that will not
    // come.
    while (!stop_ && (it = nextPost()) == queue_.end()) {
      if (current_ == nullptr) cv_.wait(lock);
      else cv_.wait_for(lock, std::chrono::milliseconds(100));
    }
    if (stop_) return;
    const StagedPost* p = *it;
    queue_.erase(it);
    const StagedCall* call = p->call;
    const size_t piece = call == current_ ? nextPiece_ : 0;
    lock.unlock();
    if (!commFailed()) {
      const std::vector<OpRequest> reqs = call->hostRequests(piece);
      Status s = Status::ok();
      if (reqs.size() == 1) {
        s = runHostNow(comm_, reqs[0]);
      } else {  // a group's send/recv: one host group
        (void)groupStart();
        for (const OpRequest& r : reqs) {
          s = queueHostNow(comm_, r);
          if (!s.isOk()) break;
        }
        Status end = groupEnd();
        if (s.isOk()) s = end;
      }
      if (!s.isOk()) {
        // The stream's result is lost whatever the error, and nobody waits
        // on this call's status: collCommGetAsyncError and the next call
        // must report it.
        fail(comm_, s);
        int expected = collSuccess;
        comm_->asyncError.compare_exchange_strong(expected, s.code());
      }
    }
    device::StagedSlotControl* control = call->control(p->slot);
    lock.lock();
    const bool last = piece + 1 >= call->pieces;
    current_ = last ? nullptr : call;
    nextPiece_ = last ? 0 : piece + 1;
    // Last: once the stream sees this, it may free the call.
    bump(control->done);
  }
}

}  // namespace coll::core
