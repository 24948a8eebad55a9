// stream_order.cc — see stream_order.h.
#include "device/stream_order.h"

#include <algorithm>

#include "p2p/cuda_status.h"

namespace coll::device {

using p2p::cudaStatus;

namespace {

// A fresh event; Relaxed for the call, as cudaEventCreate may be one of the
// calls a Global or ThreadLocal capture forbids (the event is ours).
Status createEvent(cudaEvent_t* e) {
  if (*e != nullptr) return Status::ok();
  cudaStreamCaptureMode mode = cudaStreamCaptureModeRelaxed;
  const bool swapped = cudaThreadExchangeStreamCaptureMode(&mode) == cudaSuccess;
  const cudaError_t r = cudaEventCreateWithFlags(e, cudaEventDisableTiming);
  if (swapped) (void)cudaThreadExchangeStreamCaptureMode(&mode);
  return cudaStatus(r, "cudaEventCreate");
}

}  // namespace

Result<StreamOrder::Capture> StreamOrder::captureOf(cudaStream_t s) {
  cudaStreamCaptureStatus status = cudaStreamCaptureStatusNone;
  Capture cap;
  COLL_CHECK(cudaStatus(cudaStreamGetCaptureInfo(s, &status, &cap.id), "cudaStreamGetCaptureInfo"));
  cap.active = status != cudaStreamCaptureStatusNone;
  return cap;
}

StreamOrder::~StreamOrder() {
  if (live_.done != nullptr) (void)cudaEventDestroy(live_.done);
  for (const LastCall& c : captured_)
    if (c.done != nullptr) (void)cudaEventDestroy(c.done);
}

StreamOrder::LastCall* StreamOrder::capturedCall(unsigned long long id) {
  for (LastCall& c : captured_)
    if (c.have && c.capture == id) return &c;
  return nullptr;
}

const StreamOrder::LastCall* StreamOrder::toWaitFor(cudaStream_t s, Capture cap) {
  const LastCall* last = cap.active ? capturedCall(cap.id) : &live_;
  return last != nullptr && last->have && s != last->stream ? last : nullptr;
}

Result<StreamOrder::Capture> StreamOrder::before(cudaStream_t s) {
  auto got = captureOf(s);
  COLL_CHECK(got.status());
  const Capture cap = got.value();
  if (cap.active && capturedCall(cap.id) == nullptr) {
    // The capture's first call: its launches wait for `live`'s last record.
    everCaptured_ = true;
    COLL_CHECK(createEvent(&live_.done));
    COLL_CHECK(cudaStatus(cudaStreamWaitEvent(s, live_.done, cudaEventWaitExternal),
                          "cudaStreamWaitEvent (a graph after the communicator's earlier work)"));
    return cap;
  }
  const LastCall* last = toWaitFor(s, cap);
  if (last == nullptr && !cap.active && everCaptured_ && live_.have) last = &live_;  // maybe a launch's record
  if (last != nullptr)
    COLL_CHECK(cudaStatus(cudaStreamWaitEvent(s, last->done, 0), "cudaStreamWaitEvent (a call on another stream)"));
  return cap;
}

Status StreamOrder::after(cudaStream_t s, Capture cap) {
  LastCall* last = cap.active ? capturedCall(cap.id) : &live_;
  if (last == nullptr) {  // the capture's first call: an entry of its own, the oldest's when all are taken
    if (captured_.size() < kCapturesKept) {
      captured_.emplace_back();
    } else {
      std::rotate(captured_.begin(), captured_.begin() + 1, captured_.end());
    }
    last = &captured_.back();
  }
  COLL_CHECK(createEvent(&last->done));
  COLL_CHECK(cudaStatus(cudaEventRecord(last->done, s), "cudaEventRecord (the call's end)"));
  last->stream = s;
  last->capture = cap.id;
  last->have = true;
  if (cap.active) {  // a launch of the graph records `live` here, for what comes after it
    COLL_CHECK(cudaStatus(cudaEventRecordWithFlags(live_.done, s, cudaEventRecordExternal),
                          "cudaEventRecordWithFlags (a graph's end, for the communicator's later work)"));
    live_.have = true;
  }
  return Status::ok();
}

Status StreamOrder::join(const std::vector<cudaStream_t>& streams) {
  for (cudaStream_t s : streams) {
    auto cap = captureOf(s);
    COLL_CHECK(cap.status());
    if (const LastCall* last = toWaitFor(s, cap.value()))
      COLL_CHECK(cudaStatus(cudaStreamWaitEvent(s, last->done, 0), "cudaStreamWaitEvent (the end of a group)"));
  }
  return Status::ok();
}

}  // namespace coll::device
