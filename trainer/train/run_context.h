// run_context.h — what every trainer mode shares: the communicator, its
// worker thread, and small collective helpers built on them.
#pragma once

#include <string>
#include <vector>

#include "coll.h"
#include "ddp/comm_worker.h"
#include "nn/model.h"

namespace coll::train {

struct RunContext {
  collComm_t comm = nullptr;
  int rank = 0;
  int nranks = 1;
  CommWorker* worker = nullptr;

  // Sums doubles over ranks (on the worker, after the jobs queued before).
  std::string sumDoubles(double* values, size_t n) const;
  // Every rank gets rank 0's parameters and buffers (DDP's start).
  std::string broadcastFromRank0(const std::vector<Param>& tensors) const;
  // A BatchNormSync that sums through the worker.
  BatchNormSync batchNormSync() const;
};

// Prints on rank 0 only (progress lines); errors go to stderr on every rank.
void say(const RunContext& ctx, const std::string& line);

}  // namespace coll::train
