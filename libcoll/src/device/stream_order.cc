// stream_order.cc — see stream_order.h.
#include "device/stream_order.h"

#include "cuda_status.h"

namespace coll::device {

using p2p::cudaStatus;

namespace {

Result<bool> capturing(cudaStream_t s) {
  cudaStreamCaptureStatus c = cudaStreamCaptureStatusNone;
  COLL_CHECK(cudaStatus(cudaStreamIsCapturing(s, &c), "cudaStreamIsCapturing"));
  return c != cudaStreamCaptureStatusNone;
}

}  // namespace

StreamOrder::~StreamOrder() {
  if (done_ != nullptr) (void)cudaEventDestroy(done_);
}

Status StreamOrder::before(cudaStream_t s) {
  if (!have_ || s == last_) return Status::ok();  // first call, or in order on one stream already
  auto cap = capturing(s);
  COLL_CHECK(cap.status());
  if (cap.value()) return Status::ok();
  return cudaStatus(cudaStreamWaitEvent(s, done_, 0), "cudaStreamWaitEvent (a call on another stream)");
}

Status StreamOrder::after(cudaStream_t s) {
  auto cap = capturing(s);
  COLL_CHECK(cap.status());
  if (cap.value()) {  // nothing a later call outside this graph could wait on
    have_ = false;
    return Status::ok();
  }
  if (done_ == nullptr)
    COLL_CHECK(cudaStatus(cudaEventCreateWithFlags(&done_, cudaEventDisableTiming), "cudaEventCreate"));
  COLL_CHECK(cudaStatus(cudaEventRecord(done_, s), "cudaEventRecord (the call's end)"));
  last_ = s;
  have_ = true;
  return Status::ok();
}

Status StreamOrder::join(const std::vector<cudaStream_t>& streams) {
  if (!have_) return Status::ok();  // no call, or the last one was captured
  for (cudaStream_t s : streams) {
    if (s == last_) continue;
    auto cap = capturing(s);
    COLL_CHECK(cap.status());
    if (cap.value()) continue;
    COLL_CHECK(cudaStatus(cudaStreamWaitEvent(s, done_, 0), "cudaStreamWaitEvent (the end of a group)"));
  }
  return Status::ok();
}

}  // namespace coll::device
