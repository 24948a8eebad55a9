// stream_order.h — keeps one communicator's device calls in call order
// whatever streams the caller enqueues them on.
//
// A communicator's calls share state across streams: the IPC path's
// barrier counts, per-channel counters and staging regions, the staged
// path's proxy, which runs calls in the order their streams reach them.
// Two calls on two streams could otherwise run at once, or in a different
// order on different ranks, and pair the wrong calls.  NCCL serializes a
// communicator's work the same way, and a group whose calls use several
// streams behaves as if posted on all of them.
//
// How: after each call, an event records its end on its stream; a call on
// another stream first makes that stream wait for the event.  On one
// stream that costs one event record per call and no wait.  At the end of a
// group on several streams, join() makes every one of them wait for the
// last call (so for the whole group), as NCCL does.
//
// Inside a CUDA graph capture the same is done with a second event,
// recorded in the capture: a call on another stream of the same capture
// waits for it (an edge of the graph, so the graph's nodes keep the calls'
// order however it is launched), and so do the group's streams at its end.
// An event is never waited on across a capture's boundary (CUDA refuses
// that: cudaErrorStreamCaptureIsolation), so calls made outside the capture
// and calls captured into it are not ordered with each other: a graph's
// launch is ordered with live calls by the stream it is launched on.
#pragma once

#include <cuda_runtime_api.h>

#include <vector>

#include "util/status.h"

namespace coll::device {

class StreamOrder {
 public:
  StreamOrder() = default;
  ~StreamOrder();
  StreamOrder(const StreamOrder&) = delete;
  StreamOrder& operator=(const StreamOrder&) = delete;

  // Before a call's work goes on s (s's device current): s waits for the
  // previous call when that went to another stream (of the same capture,
  // when s is capturing).
  Status before(cudaStream_t s);
  // After the call's work went on s: records its end there.
  Status after(cudaStream_t s);
  // Every stream in `streams` (their device current) waits for the last
  // call (live or of the same capture): the end of a group whose calls used
  // them.
  Status join(const std::vector<cudaStream_t>& streams);
  // before(s), launch() (the call's work on s), after(s); the first error.
  template <class Launch>
  Status ordered(cudaStream_t s, Launch&& launch) {
    Status st = before(s);
    if (st.isOk()) st = launch();
    if (st.isOk()) st = after(s);
    return st;
  }

 private:
  // The end of the previous call on one side of a capture's boundary.
  struct LastCall {
    cudaEvent_t done = nullptr;      // its end (when recorded)
    cudaStream_t stream = nullptr;   // its stream: compared, never used
    unsigned long long capture = 0;  // the capture it was recorded in (captured side)
    bool have = false;               // a previous call with a recorded end
  };
  // The last call made outside any capture, and the last captured one.
  LastCall live_, captured_;
  // The previous call s must wait for: one on s's side of a capture's edge
  // (of s's own capture when s captures) on another stream; none: nullptr.
  Result<const LastCall*> toWaitFor(cudaStream_t s) const;
};

}  // namespace coll::device
