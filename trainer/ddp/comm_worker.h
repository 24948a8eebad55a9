// comm_worker.h — the thread that talks to libcoll for the trainer.
//
// libcoll's host collectives block the calling thread, so overlap needs a
// second thread: backward hands finished gradient buckets to this worker
// and goes on computing while it all-reduces them.  Only this thread ever
// calls the communicator (one thread per comm, as the API asks).
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <mutex>
#include <string>
#include <thread>

#include "coll.h"

namespace coll::train {

class CommWorker {
 public:
  explicit CommWorker(collComm_t comm);
  ~CommWorker();
  CommWorker(const CommWorker&) = delete;
  CommWorker& operator=(const CommWorker&) = delete;

  // Queues fn(comm) to run on the worker; jobs run in order.
  void submit(std::function<collResult_t(collComm_t)> fn);
  // Waits for every queued job; returns the first failure's message ("" if
  // none).  Seconds the caller spent blocked here go to waitedSeconds().
  std::string drain();
  // Runs fn on the worker and waits for it (sync batch norm, barriers).
  std::string call(std::function<collResult_t(collComm_t)> fn);

  double busySeconds() const { return busy_; }     // worker time in collectives
  double waitedSeconds() const { return waited_; } // caller time blocked in drain/call
  void resetTimers() { busy_ = waited_ = 0; }
  collComm_t comm() const { return comm_; }

 private:
  void loop();

  collComm_t comm_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::function<collResult_t(collComm_t)>> jobs_;
  int running_ = 0;
  bool stop_ = false;
  std::string error_;
  double busy_ = 0, waited_ = 0;
  std::thread thread_;
};

}  // namespace coll::train
