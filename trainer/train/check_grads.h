// check_grads.h — coll-train --check-grads: are the distributed gradients
// those of one process?
//
// Every rank runs the data-parallel step on its local batch (B samples)
// and, beside it, a reference model with the same initial parameters on
// the global batch (the N local batches concatenated in rank order: the
// sampler's rule), in one process, with no communication.  After the
// all-reduce every gradient tensor must match the reference's:
//   err(t) = max_i |g_i - r_i| / max_i |r_i|  <= 1e-5
// (why this bound holds: docs/trainer.md).  Then both train K steps with
// the same SGD and the parameters are compared the same way.  ResNet runs
// with synchronized batch norm here: only then do N ranks compute the same
// function as one process on N*B samples.
#pragma once

#include "train/options.h"
#include "train/run_context.h"

namespace coll::train {

int runGradCheck(const TrainOptions& o, const RunContext& ctx);

}  // namespace coll::train
