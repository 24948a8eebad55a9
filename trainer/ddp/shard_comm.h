// shard_comm.h — the collectives of a sharded optimizer (ddp/shard_layout.h),
// one tensor at a time, to be called inside a group on the comm worker.
#pragma once

#include <string>
#include <vector>

#include "coll.h"
#include "ddp/comm_worker.h"
#include "ddp/shard_layout.h"

namespace coll::train {

// Gradients: this rank's piece gets the average over ranks (reduce-scatter,
// in place), the tail too (all-reduce); the rest of `grad` is left as it was.
collResult_t reduceScatterAvg(float* grad, const TensorShard& s, int rank, collComm_t comm);
// After an update of the pieces: every rank's piece lands everywhere
// (all-gather, in place).  The tail is already the same on every rank.
collResult_t allGatherPieces(float* data, const TensorShard& s, int rank, collComm_t comm);

// allGatherPieces for every tensor of `layout` (data[i] goes with
// layout.tensors[i]), one group, run on the worker; returns "" or the error.
std::string gatherAll(CommWorker& worker, const std::vector<float*>& data, const ShardLayout& layout);

}  // namespace coll::train
