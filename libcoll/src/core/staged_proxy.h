// staged_proxy.h — the host-staged device path's proxy thread, one per
// communicator: it runs the calls its streams post (core/staged_call.h),
// piece by piece — copy in, the host executor over the communicator's
// transports (shm, sockets), copy back, on a CUDA stream of its own — and
// marks each call done for the stream's wait kernel.
//
// Why a thread of its own: a stream's host function only posts and
// returns.  CUDA may run the host functions of independent streams one at a
// time (cudaLaunchHostFunc), so one that waited for peers inside would stall
// every other stream's, and two communicators whose calls two ranks reach in
// opposite orders would wait for each other until the timeout
// (tests/gpu: testCrossedStreams).
//
// It sleeps in every wait (a condition variable for posts, the host
// executor's futex waits for peers, blocking-sync CUDA events for its
// copies), never spins: a rank bound to one core (collrun's default) shares
// that core with the application's thread, which CUDA lets spin in its own
// synchronize calls, and a thread that wakes from sleep is scheduled at
// once where a spinning one waits for the scheduler's tick.  (With the
// copies waited for by spinning, an H200 run showed two ranks' 256 KiB
// staged all-reduces finishing in turn 4 ms apart, 7.9 ms per call.)
//
// Its CUDA objects (stream, events) are made by the enqueueing thread
// (prepare), never by the proxy: making one takes the driver's write lock,
// which starves while another thread of the process waits in a synchronous
// CUDA call (an H200 run: the application's pageable cudaMemcpyAsync behind
// a staged call polled the lock as a reader while the proxy's first
// cudaEventCreate waited for it as the writer, and the call waited for the
// proxy: a deadlock).  The proxy thread itself only selects the device and
// queues copies and event records, and waits on events.
//
// Order: calls run whole, in the order they are posted (the order their
// streams reach them, which the enqueue's StreamOrder makes the call order,
// device/stream_order.h); a call's pieces in order.
#pragma once

#include <chrono>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <thread>

#include "core/device_staged.h"
#include "core/staged_call.h"

namespace coll::core {

class StagedProxy {
 public:
  explicit StagedProxy(collComm* comm);
  // Stops and joins; only once no stream can post any more (teardown
  // synchronizes the device first).
  ~StagedProxy();
  StagedProxy(const StagedProxy&) = delete;
  StagedProxy& operator=(const StagedProxy&) = delete;

  // On the enqueueing thread, `device` current, before a call on `device`
  // is queued: makes the proxy's stream and events there (once).  An error
  // for a second device (one GPU per communicator).
  Status prepare(int device);
  // From a host function: the stream reached post->call.  Returns at once.
  void post(const StagedPost* post);
  // The communicator failed outside the proxy: stop waiting for pieces
  // that may never come (they are finished unrun).
  void wake();

 private:
  void run();
  // One call's pieces; a failure fails the communicator (its remaining
  // pieces are not run).  Returns once no copy of the call is in flight.
  void runCall(const StagedCall& call);
  // Times for the TRACE log (COLL_DEBUG=TRACE): where a call's time went.
  struct CallTimes {
    double waitIn = 0, host = 0;  // microseconds: for copies in, in host calls
  };
  Status runPieces(const StagedCall& call, CallTimes* t);
  // The proxy thread's first call: its device current, Relaxed capture mode.
  Status enterDevice();
  bool commFailed() const;

  collComm* comm_;
  std::mutex mu_;
  std::condition_variable cv_;
  struct Posted {
    const StagedPost* post;
    std::chrono::steady_clock::time_point at;
  };
  std::deque<Posted> queue_;
  bool stop_ = false;
  // Made by prepare (under mu_, before any call that uses them is posted),
  // then read by the proxy thread: its CUDA stream and, per slot, the
  // events of the copies in and out.
  int device_ = -1;
  bool entered_ = false;  // the proxy thread's own
  cudaStream_t stream_ = nullptr;
  cudaEvent_t copiedIn_[kStagedSlots] = {};
  cudaEvent_t copiedOut_[kStagedSlots] = {};
  cudaEvent_t finished_ = nullptr;  // after a call's last copy
  std::thread thread_;
};

// The post host function (cudaHostFn_t): counts the run in the call's
// `posted`, then hands the call to the proxy.  No CUDA calls, no waiting.
void CUDART_CB postStagedCall(void* post);

}  // namespace coll::core
