// stream_order.cc — see stream_order.h.
#include "device/stream_order.h"

#include "cuda_status.h"

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
  for (cudaEvent_t e : {live_.done, captured_.done})
    if (e != nullptr) (void)cudaEventDestroy(e);
}

const StreamOrder::LastCall* StreamOrder::toWaitFor(cudaStream_t s, Capture cap) const {
  if (cap.active) {
    const bool sameCapture = captured_.have && captured_.capture == cap.id;
    return sameCapture && s != captured_.stream ? &captured_ : nullptr;
  }
  return live_.have && s != live_.stream ? &live_ : nullptr;
}

Result<StreamOrder::Capture> StreamOrder::before(cudaStream_t s) {
  auto got = captureOf(s);
  COLL_CHECK(got.status());
  const Capture cap = got.value();
  if (cap.active && !(captured_.have && captured_.capture == cap.id)) {
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
  LastCall& last = cap.active ? captured_ : live_;
  COLL_CHECK(createEvent(&last.done));
  COLL_CHECK(cudaStatus(cudaEventRecord(last.done, s), "cudaEventRecord (the call's end)"));
  last.stream = s;
  last.capture = cap.id;
  last.have = true;
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
