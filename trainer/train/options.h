// options.h — coll-train's command line.
#pragma once

#include <cstdint>
#include <string>

#include "ddp/sgd.h"
#include "nn/model.h"
#include "coll/base/status.h"

namespace coll::train {

struct TrainOptions {
  ModelConfig model;
  int epochs = 1;
  int batch = 64;            // per rank
  int accumSteps = 1;        // micro-steps per optimizer step
  SgdConfig sgd;
  double bucketMB = 25.0;
  bool syncBatchNorm = false;
  bool shardOptimizer = false;  // ZeRO-1 (ddp/shard_layout.h)
  bool dropLast = false;     // drop each epoch's last, incomplete global batch (default: train on it)
  std::string dataDir = "/usr/share/datasets/fashion-mnist";
  long limitTrain = 0;       // use only the first N training samples (0: all)
  long limitTest = 0;
  uint64_t seed = 1;
  std::string checkpoint;    // written by rank 0 after every epoch (and --checkpoint-every)
  long checkpointEvery = 0;  // steps; 0: at epoch ends only
  bool resume = false;
  long stopAfterSteps = 0;   // stop (after checkpointing) once this many steps ran: tests of resume
  std::string csv;           // loss curve
  std::string plot;          // PNG of the loss curve (python3-matplotlib)
  int logEvery = 50;         // steps between progress lines
  bool checkGrads = false;   // --check-grads: distributed vs one-process gradients
  int checkSteps = 3;        // training steps compared after the gradient check
  std::string dumpParams;    // write the final parameters here (tests compare runs)
  bool help = false;         // --help: print usage() and exit 0
};

// Parses argv; a bad option is an error naming it.
Result<TrainOptions> parseOptions(int argc, char** argv);
const char* usage();

}  // namespace coll::train
