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
// last call (so for the whole group), as NCCL does.  Not while the
// call's stream or the previous call's is being captured into a CUDA graph
// (an event recorded outside a capture cannot be waited on inside it, and
// the other way round): a graph's order is the one its capture gives it.
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
  // previous call when that went to another stream.
  Status before(cudaStream_t s);
  // After the call's work went on s: records its end there.
  Status after(cudaStream_t s);
  // Every stream in `streams` (their device current) waits for the last
  // call: the end of a group whose calls used them.
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
  cudaEvent_t done_ = nullptr;   // the previous call's end (when recorded)
  cudaStream_t last_ = nullptr;  // its stream: compared, never used
  bool have_ = false;            // a previous call with a recorded end
};

}  // namespace coll::device
