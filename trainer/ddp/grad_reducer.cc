#include "ddp/grad_reducer.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <stdexcept>
#include <utility>

#include "ddp/shard_comm.h"

namespace coll::train {

GradReducer::GradReducer(std::vector<Param> params, size_t bucketBytes, CommWorker* worker, const ShardLayout* shards)
    : params_(std::move(params)), worker_(worker), shards_(shards), bucketOf_(params_.size()) {
  if (shards_ != nullptr && shards_->tensors.size() != params_.size())
    throw std::invalid_argument("GradReducer: the shard layout does not match the parameters");
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
    cur.params.push_back(i);
    curBytes += bytes;
  }
  if (!cur.params.empty()) buckets_.push_back(std::move(cur));
  for (auto& b : buckets_)
    for (int p : b.params) b.elements += params_[p].count;
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
    out += fmt::format("{}{:.2f} MB ({} tensors)", b ? ", " : "", buckets_[b].elements * 4 / 1e6,
                       buckets_[b].params.size());
  return out;
}

void GradReducer::beginMicroStep(bool last) {
  if (!last_) accumulated_ = true;  // the previous micro-step left its sum in accum_
  last_ = last;
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
  if (accumulated_)
    for (size_t k = 0; k < p.count; ++k) p.grad[k] += acc[k];
  Bucket& b = buckets_[bucketOf_[i]];
  if (++b.ready < static_cast<int>(b.params.size())) return;
  // The bucket's tensors are all-reduced where they are (the model's grad
  // memory), one group call: no copy into a flat buffer and back, which
  // for 23 MB of gradients cost the compute thread more than the
  // all-reduce itself.  Averaged over ranks: each rank's gradient is the
  // mean over its local batch, so the average is the global-batch mean.
  if (shards_ != nullptr) {
    std::vector<std::pair<float*, TensorShard>> pieces;
    for (int q : b.params) pieces.emplace_back(params_[q].grad, shards_->tensors[q]);
    worker_->submit([pieces = std::move(pieces), rank = shards_->rank](collComm_t comm) {
      collResult_t r = collGroupStart();
      for (const auto& [ptr, shard] : pieces) {
        if (r != collSuccess) break;
        r = reduceScatterAvg(ptr, shard, rank, comm);
      }
      collResult_t end = collGroupEnd();
      return r != collSuccess ? r : end;
    });
    return;
  }
  std::vector<std::pair<float*, size_t>> tensors;
  for (int q : b.params) tensors.emplace_back(params_[q].grad, params_[q].count);
  worker_->submit([tensors = std::move(tensors)](collComm_t comm) {
    collResult_t r = collGroupStart();
    for (const auto& [ptr, n] : tensors) {
      if (r != collSuccess) break;
      r = collAllReduce(ptr, ptr, n, collFloat32, collAvg, comm, nullptr);
    }
    collResult_t end = collGroupEnd();
    return r != collSuccess ? r : end;
  });
}

std::string GradReducer::finish() {
  std::string err = worker_->drain();
  accumulated_ = false;
  last_ = true;
  return err;
}

}  // namespace coll::train
