// stream_order.cc — see stream_order.h.
#include "device/stream_order.h"

#include "cuda_status.h"

namespace coll::device {

using p2p::cudaStatus;

namespace {

// Whether s is capturing into a graph, and that capture's id.
struct CaptureOf {
  bool active = false;
  unsigned long long id = 0;
};

Result<CaptureOf> captureOf(cudaStream_t s) {
  cudaStreamCaptureStatus c = cudaStreamCaptureStatusNone;
  unsigned long long id = 0;
  COLL_CHECK(cudaStatus(cudaStreamGetCaptureInfo(s, &c, &id), "cudaStreamGetCaptureInfo"));
  return CaptureOf{c != cudaStreamCaptureStatusNone, id};
}

// A fresh event; Relaxed for the call, as cudaEventCreate may be one of the
// calls a Global or ThreadLocal capture forbids (the event is ours).
Status createEvent(cudaEvent_t* e) {
  cudaStreamCaptureMode mode = cudaStreamCaptureModeRelaxed;
  const bool swapped = cudaThreadExchangeStreamCaptureMode(&mode) == cudaSuccess;
  const cudaError_t r = cudaEventCreateWithFlags(e, cudaEventDisableTiming);
  if (swapped) (void)cudaThreadExchangeStreamCaptureMode(&mode);
  return cudaStatus(r, "cudaEventCreate");
}

}  // namespace

StreamOrder::~StreamOrder() {
  for (cudaEvent_t e : {live_.done, captured_.done})
    if (e != nullptr) (void)cudaEventDestroy(e);
}

Result<const StreamOrder::LastCall*> StreamOrder::toWaitFor(cudaStream_t s) const {
  // No wait on either side of a capture's edge (the first call, or one
  // stream throughout): no query either.
  if ((!live_.have || s == live_.stream) && (!captured_.have || s == captured_.stream)) return nullptr;
  auto cap = captureOf(s);
  COLL_CHECK(cap.status());
  const LastCall& last = cap.value().active ? captured_ : live_;
  if (!last.have || s == last.stream) return nullptr;                        // in order on one stream already
  if (cap.value().active && last.capture != cap.value().id) return nullptr;  // another capture's
  return &last;
}

Status StreamOrder::before(cudaStream_t s) {
  auto last = toWaitFor(s);
  COLL_CHECK(last.status());
  if (last.value() == nullptr) return Status::ok();
  return cudaStatus(cudaStreamWaitEvent(s, last.value()->done, 0), "cudaStreamWaitEvent (a call on another stream)");
}

Status StreamOrder::after(cudaStream_t s) {
  auto cap = captureOf(s);
  COLL_CHECK(cap.status());
  LastCall& last = cap.value().active ? captured_ : live_;
  if (last.done == nullptr) COLL_CHECK(createEvent(&last.done));
  COLL_CHECK(cudaStatus(cudaEventRecord(last.done, s), "cudaEventRecord (the call's end)"));
  last.stream = s;
  last.capture = cap.value().id;
  last.have = true;
  return Status::ok();
}

Status StreamOrder::join(const std::vector<cudaStream_t>& streams) {
  for (cudaStream_t s : streams) {
    auto last = toWaitFor(s);
    COLL_CHECK(last.status());
    if (last.value() != nullptr)
      COLL_CHECK(cudaStatus(cudaStreamWaitEvent(s, last.value()->done, 0), "cudaStreamWaitEvent (the end of a group)"));
  }
  return Status::ok();
}

}  // namespace coll::device
