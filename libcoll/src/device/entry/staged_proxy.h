// staged_proxy.h — the host-staged device path's proxy thread, one per
// communicator: it runs the calls its streams post
// (device/entry/staged_call.h), piece by piece — once the call's kernel has copied a piece into its slot,
// the host executor over the communicator's transports (shm, sockets) on
// the slot — and announces each piece run, for the kernel to copy back.
//
// It makes no CUDA call (device/staged_kernel.h says why): it reads and
// writes pinned host memory only.
//
// Why a thread of its own: a stream's host function only posts and
// returns.  CUDA may run the host functions of independent streams one at a
// time (cudaLaunchHostFunc), so one that waited for peers inside would stall
// every other stream's, and two communicators whose calls two ranks reach in
// opposite orders would wait for each other until the timeout
// (tests/gpu: testCrossedStreams).
//
// It sleeps in every wait (a condition variable for posts, the host
// executor's futex waits for peers, growing naps while the kernel copies a
// piece in), never spins for long: a rank bound to one core (collrun's
// default) shares that core with the application's thread, which CUDA lets
// spin in its own synchronize calls, and a thread that wakes from sleep is
// scheduled at once where a spinning one waits for the scheduler's tick
// (docs/ARCHITECTURE.md, "Device collectives": what spinning cost on an H200).
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

#include "device/entry/staged_call.h"

namespace coll::core {

class StagedProxy {
 public:
  explicit StagedProxy(collComm* comm);
  // Stops and joins; only once no stream can post any more (teardown
  // synchronizes the device first).
  ~StagedProxy();
  StagedProxy(const StagedProxy&) = delete;
  StagedProxy& operator=(const StagedProxy&) = delete;

  // From a host function: the stream reached post->call.  Returns at once.
  void post(const StagedPost* post);

 private:
  void run();
  // One call's pieces; a failure fails the communicator.  Pieces not run
  // are finished unrun (skip), so the kernel ends.
  void runCall(const StagedCall& call);
  // Times for the TRACE log (COLL_DEBUG=TRACE): where a call's time went.
  struct CallTimes {
    double waitIn = 0, host = 0;  // microseconds: for the kernel's copies in, in host calls
  };
  // Runs pieces in order; *ran: how many.
  Status runPieces(const StagedCall& call, CallTimes* t, size_t* ran);
  // Until the kernel has copied piece k in: true; false when the
  // communicator failed elsewhere meanwhile; an error at the timeout or an
  // abort.
  Result<bool> awaitPiece(const StagedCall& call, size_t k);
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
  std::thread thread_;
};

// The post host function (cudaHostFn_t): starts the call's run (zeroes its
// per-run words, counts it in `posted`), then hands the call to the proxy.
// No CUDA calls, no waiting.
void CUDART_CB postStagedCall(void* post);

}  // namespace coll::core
