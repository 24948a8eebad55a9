#include "ddp/comm_worker.h"

#include "coll/base/clock.h"

namespace coll::train {

CommWorker::CommWorker(collComm_t comm) : comm_(comm), thread_([this] { loop(); }) {}

CommWorker::~CommWorker() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  thread_.join();
}

void CommWorker::submit(std::function<collResult_t(collComm_t)> fn) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    jobs_.push_back(std::move(fn));
  }
  cv_.notify_all();
}

std::string CommWorker::drain() {
  double t0 = nowSeconds();
  std::unique_lock<std::mutex> lock(mu_);
  cv_.wait(lock, [&] { return jobs_.empty() && running_ == 0; });
  waited_ += nowSeconds() - t0;
  std::string e = error_;
  return e;
}

std::string CommWorker::call(std::function<collResult_t(collComm_t)> fn) {
  submit(std::move(fn));
  return drain();
}

void CommWorker::loop() {
  std::unique_lock<std::mutex> lock(mu_);
  for (;;) {
    cv_.wait(lock, [&] { return stop_ || !jobs_.empty(); });
    if (jobs_.empty() && stop_) return;
    auto job = std::move(jobs_.front());
    jobs_.pop_front();
    ++running_;
    const bool failedBefore = !error_.empty();
    lock.unlock();
    double t0 = nowSeconds();
    // After a failure the comm is unusable: later jobs are skipped, the
    // first error is what the trainer reports.
    collResult_t r = failedBefore ? collSuccess : job(comm_);
    double dt = nowSeconds() - t0;
    lock.lock();
    busy_ += dt;
    if (r != collSuccess && error_.empty()) error_ = collGetLastError(comm_);
    --running_;
    cv_.notify_all();
  }
}

}  // namespace coll::train
