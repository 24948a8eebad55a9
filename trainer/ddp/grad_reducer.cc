#include "ddp/grad_reducer.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>

namespace coll::train {

GradReducer::GradReducer(std::vector<Param> params, size_t bucketBytes, CommWorker* worker)
    : params_(std::move(params)), worker_(worker), bucketOf_(params_.size()), offsetOf_(params_.size()) {
  // Backward finishes the last layer first: fill buckets in that order so
  // the first bucket is ready earliest.
  Bucket cur;
  size_t curBytes = 0;
  for (int i = static_cast<int>(params_.size()) - 1; i >= 0; --i) {
    size_t bytes = params_[i].count * sizeof(float);
    if (!cur.params.empty() && curBytes + bytes > bucketBytes) {
      buckets_.push_back(std::move(cur));
      cur = Bucket{};
      curBytes = 0;
    }
    bucketOf_[i] = static_cast<int>(buckets_.size());
    offsetOf_[i] = curBytes / sizeof(float);
    cur.params.push_back(i);
    curBytes += bytes;
  }
  if (!cur.params.empty()) buckets_.push_back(std::move(cur));
  for (auto& b : buckets_) {
    size_t n = 0;
    for (int p : b.params) n += params_[p].count;
    b.buf.assign(n, 0.0f);
  }
  size_t total = 0;
  for (const auto& p : params_) {
    accumOffset_.push_back(total);
    total += p.count;
  }
  accum_.assign(total, 0.0f);
}

std::string GradReducer::describeBuckets() const {
  std::string out;
  for (size_t b = 0; b < buckets_.size(); ++b)
    out += fmt::format("{}{:.2f} MB ({} tensors)", b ? ", " : "", buckets_[b].buf.size() * 4 / 1e6,
                       buckets_[b].params.size());
  return out;
}

void GradReducer::beginMicroStep(bool last, int microSteps) {
  if (!last_) accumulated_ = true;  // the previous micro-step left its sum in accum_
  last_ = last;
  microSteps_ = microSteps;
  for (auto& b : buckets_) b.ready = 0;
}

void GradReducer::gradReady(int i) {
  const Param& p = params_[i];
  float* acc = accum_.data() + accumOffset_[i];
  if (!last_) {
    // Not synchronizing yet: keep the sum of this and earlier micro-steps.
    if (accumulated_) {
      for (size_t k = 0; k < p.count; ++k) acc[k] += p.grad[k];
    } else {
      std::memcpy(acc, p.grad, p.count * sizeof(float));
    }
    return;
  }
  Bucket& b = buckets_[bucketOf_[i]];
  float* dst = b.buf.data() + offsetOf_[i];
  if (accumulated_) {
    for (size_t k = 0; k < p.count; ++k) dst[k] = acc[k] + p.grad[k];
  } else {
    std::memcpy(dst, p.grad, p.count * sizeof(float));
  }
  if (++b.ready == static_cast<int>(b.params.size())) {
    float* buf = b.buf.data();
    size_t n = b.buf.size();
    // In place, averaged over ranks: each rank's gradient is already the
    // mean over its local batch, so the average is the global-batch mean.
    worker_->submit([buf, n](collComm_t comm) {
      return collAllReduce(buf, buf, n, collFloat32, collAvg, comm, nullptr);
    });
  }
}

std::string GradReducer::finish() {
  std::string err = worker_->drain();
  accumulated_ = false;
  last_ = true;
  if (!err.empty()) return err;
  const float scale = 1.0f / static_cast<float>(microSteps_);
  for (size_t i = 0; i < params_.size(); ++i) {
    const Bucket& b = buckets_[bucketOf_[i]];
    const float* src = b.buf.data() + offsetOf_[i];
    float* g = params_[i].grad;
    if (microSteps_ == 1) {
      std::memcpy(g, src, params_[i].count * sizeof(float));
    } else {
      for (size_t k = 0; k < params_[i].count; ++k) g[k] = src[k] * scale;
    }
  }
  return "";
}

}  // namespace coll::train
