// stream_order.h — keeps one communicator's device calls in call order
// whatever streams the caller enqueues them on, live or captured into CUDA
// graphs.
//
// A communicator's calls share state across streams: the IPC path's
// barrier counts, per-channel counters and staging regions, the staged
// path's proxy, which runs calls in the order their streams reach them.
// Two calls on two streams could otherwise run at once, or in a different
// order on different ranks, and pair the wrong calls.  NCCL serializes a
// communicator's work the same way, and a group whose calls use several
// streams behaves as if posted on all of them.
//
// How, outside any capture: after each call an event (`live`) records its
// end on its stream; a call on another stream first makes that stream wait
// for it.  On one stream that costs one event record per call and no wait.
// At the end of a group on several streams, join() makes every one of them
// wait for the last call (so for the whole group), as NCCL does.
//
// Inside a capture, a second event, recorded in the capture, does the same
// between the capture's streams: edges of the graph (one such event for
// each of the last kCapturesKept captures, so captures made at once on
// different streams each keep their own order).  And a
// graph is ordered with the communicator's other work wherever it is
// launched, as NCCL's graph mixing does: a capture's first call starts with
// an event wait node on `live` (a launch waits for the last call recorded
// before it, live or another launch's), each captured call ends with an
// event record node of `live`, and once anything was captured every live
// call waits for `live`, wherever it was last recorded (a launch's record
// may be on any stream).  Nothing is waited on across a capture's boundary
// other than through those nodes, which CUDA would refuse
// (cudaErrorStreamCaptureIsolation).  A graph must not be launched after
// its communicator is destroyed: that event goes with it (as its buffers
// and peers' mappings do).
#pragma once

#include <cuda_runtime_api.h>

#include <vector>

#include "coll/base/status.h"

namespace coll::device {

class StreamOrder {
 public:
  StreamOrder() = default;
  ~StreamOrder();
  StreamOrder(const StreamOrder&) = delete;
  StreamOrder& operator=(const StreamOrder&) = delete;

  // A call's work on s (s's device current): s first waits for the
  // communicator's previous call, then launch() queues the call, then its
  // end is recorded; the first error.
  template <class Launch>
  Status ordered(cudaStream_t s, Launch&& launch) {
    auto cap = before(s);
    if (!cap.isOk()) return cap.status();
    Status st = launch();
    if (st.isOk()) st = after(s, cap.value());
    return st;
  }
  // Every stream in `streams` (their device current) waits for the last
  // call (live, or of the same capture): the end of a group whose calls
  // used them.
  Status join(const std::vector<cudaStream_t>& streams);

  // Whether a stream is capturing into a graph, and that capture's id.
  struct Capture {
    bool active = false;
    unsigned long long id = 0;
  };
  // ordered()'s two halves, for a call whose work spans several streams of
  // several communicators' ranks (device/local_clique.h): before() on each
  // rank's stream, the work, then after() with what before() returned.
  // s waits for what the next call on it must follow; s's capture state.
  Result<Capture> before(cudaStream_t s);
  // Records the end of the call just queued on s.
  Status after(cudaStream_t s, Capture cap);

 private:
  static Result<Capture> captureOf(cudaStream_t s);
  // The end of the previous call on one side of a capture's boundary.
  struct LastCall {
    cudaEvent_t done = nullptr;      // its end (when recorded)
    cudaStream_t stream = nullptr;   // its stream: compared, never used
    unsigned long long capture = 0;  // the capture it was recorded in (captured side)
    bool have = false;               // a previous call with a recorded end
  };

  // The last call of capture `id` (nullptr: none yet).
  LastCall* capturedCall(unsigned long long id);
  // The previous call on s's side that s must wait for (nullptr: none).
  const LastCall* toWaitFor(cudaStream_t s, Capture cap);

  // More captures of one communicator in progress at once than this is not
  // expected; past it the oldest's entry (and event) is reused.
  static constexpr size_t kCapturesKept = 8;
  LastCall live_;
  std::vector<LastCall> captured_;  // the last call of each recent capture, oldest first
  bool everCaptured_ = false;  // a call was captured: `live` may be recorded by a launch
};

}  // namespace coll::device
