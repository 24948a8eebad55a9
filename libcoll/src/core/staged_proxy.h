// staged_proxy.h — the host-staged device path's proxy thread, one per
// communicator: it runs the pieces its streams post (core/staged_call.h)
// through the host executor over the communicator's transports (shm,
// sockets), and marks each done in its slot for the stream's wait kernel.
//
// Why a thread of its own: a stream's host function only posts and
// returns.  CUDA may run the host functions of independent streams one at a
// time (cudaLaunchHostFunc), so one that waited for peers inside would stall
// every other stream's, and two communicators whose calls two ranks reach in
// opposite orders would wait for each other until the timeout
// (tests/gpu: testCrossedStreams).
//
// Order: calls run whole, in the order their first pieces are posted (the
// order their streams reach them, as on the IPC path's barriers); a call's
// pieces in order.  So calls of one communicator on several streams must be
// ordered alike on every rank by the caller, as with NCCL.
#pragma once

#include <condition_variable>
#include <deque>
#include <mutex>
#include <thread>

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

  // From a host function: the next piece of post->call is in post->slot.
  // Returns at once.
  void post(const StagedPost* post);
  // The communicator failed outside the proxy: stop waiting for pieces
  // that may never come (they are finished unrun).
  void wake();

 private:
  void run();
  // The posted piece to take next (queue_ locked), or end().
  std::deque<const StagedPost*>::iterator nextPost();
  bool commFailed() const;

  collComm* comm_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<const StagedPost*> queue_;
  const StagedCall* current_ = nullptr;  // the call whose pieces run now
  size_t nextPiece_ = 0;
  bool stop_ = false;
  std::thread thread_;
};

// The post host function (cudaHostFn_t): counts the piece in its slot's
// `posted`, then hands it to the proxy.  No CUDA calls, no waiting.
void CUDART_CB postStagedPiece(void* post);

}  // namespace coll::core
