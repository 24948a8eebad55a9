// train_loop.h — data-parallel training: epochs of bucketed, overlapped
// gradient all-reduces, SGD, evaluation, checkpoints, progress and a CSV
// of the loss curve.
#pragma once

#include "train/options.h"
#include "train/run_context.h"

namespace coll::train {

// Returns the process exit status (0 on success), having printed why not.
int runTraining(const TrainOptions& o, const RunContext& ctx);

}  // namespace coll::train
