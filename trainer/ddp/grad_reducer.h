// grad_reducer.h — data-parallel gradients: buckets all-reduced while
// backward still runs.
//
// Parameters are grouped into buckets of about bucketBytes in the order
// backward finishes them (reverse of forward).  When every gradient of a
// bucket is final (Model::backward's onGradReady), the bucket is queued on
// the CommWorker for an in-place avg all-reduce and backward goes on.
// Gradient accumulation: micro-steps before the last only add into a local
// buffer; the last one sends accumulated + fresh gradients, once.
// With a ShardLayout (--shard-optimizer) a bucket is reduce-scattered
// instead: each rank gets the average only of the pieces it updates
// (ddp/shard_layout.h), the same bytes on the wire as half an all-reduce.
#pragma once

#include <string>
#include <vector>

#include "ddp/comm_worker.h"
#include "ddp/shard_layout.h"
#include "nn/model.h"

namespace coll::train {

class GradReducer {
 public:
  // shards: null, or the layout of params (it must outlive the reducer).
  GradReducer(std::vector<Param> params, size_t bucketBytes, CommWorker* worker, const ShardLayout* shards = nullptr);

  // Before each micro-step's backward: `last` says whether it synchronizes.
  // The loss divisor weights the micro-steps (and ranks): gradients are
  // summed over micro-steps and averaged over ranks, nothing else.
  void beginMicroStep(bool last);
  // Model::backward's onGradReady.
  void gradReady(int paramIndex);
  // After the last micro-step's backward: waits for the buckets and leaves
  // the gradient (summed over micro-steps, averaged over ranks) in every
  // param's grad (sharded: in this rank's pieces and the tails only).
  // Returns "" or the communication error.
  std::string finish();

  size_t bucketCount() const { return buckets_.size(); }
  std::string describeBuckets() const;

 private:
  struct Bucket {
    std::vector<int> params;
    size_t elements = 0;
    int ready = 0;
  };
  std::vector<Param> params_;
  CommWorker* worker_;
  const ShardLayout* shards_;
  std::vector<Bucket> buckets_;
  std::vector<int> bucketOf_;      // param -> bucket
  std::vector<float> accum_;       // accumulated grads (micro-steps), param-major
  std::vector<size_t> accumOffset_;
  bool last_ = true;
  bool accumulated_ = false;       // accum_ holds earlier micro-steps
};

}  // namespace coll::train
