// args.h — nccl-tests compatible command line of the perf tools.
#pragma once

#include "common/colls.h"
#include "common/dtypes.h"

#include <cstddef>
#include <string>
#include <vector>

namespace collperf {

struct PerfArgs {
  size_t minBytes = 32u << 20;
  size_t maxBytes = 32u << 20;
  size_t stepBytes = 1u << 20;
  size_t stepFactor = 1;  // > 1: multiplicative steps, else additive
  int iters = 20;
  int warmup = 5;
  int check = 1;          // number of checked runs per size (0: no check)
  int blocking = 0;       // accepted; host calls always block
  int average = 3;        // time over ranks: 0 rank 0, 1 avg, 2 min, 3 max
  std::vector<collDataType_t> dtypes{collFloat32};
  std::vector<RedOp> ops{RedOp::Sum};
  int root = 0;
  bool allRoots = false;
  // --model: extra columns with the tuner's algorithm and the alpha-beta
  // prediction (collGetPlanInfo); --alpha/--beta/--bw replace the model's
  // parameters in the printed prediction only (negative: not given).
  bool model = false;
  double alpha = -1;  // s per hop
  double beta = -1;   // s per byte (--bw G sets 1 / (G * 1e9))
};

// Parses a size: digits with an optional fraction and K/M/G suffix (binary
// units, like nccl-tests).  False on anything else.
bool parseSize(const char* s, size_t* out);

// Parses argv.  Returns -1 to go on, or the exit code: 0 after -h, 2 after
// a bad value (the message is printed to stderr).
int parsePerfArgs(int argc, char** argv, Coll coll, PerfArgs* out);

// The sizes the sweep visits, in order.
std::vector<size_t> sweepSizes(const PerfArgs& a);

}  // namespace collperf
