// sgd.h — SGD with momentum and weight decay, PyTorch's formulation:
//   g += wd * w;  v = momentum * v + g;  w -= lr * v
// Learning rate: base, optionally scaled linearly with the number of ranks
// (Goyal et al.), warmed up linearly over the first warmupSteps, and
// optionally decayed along a half cosine to 0 at totalSteps.
#pragma once

#include <string>
#include <vector>

#include "ddp/shard_layout.h"
#include "nn/model.h"

namespace coll::train {

struct SgdConfig {
  double lr = 0.05;
  double momentum = 0.9;
  double weightDecay = 5e-4;
  bool linearScaling = false;  // lr *= nranks
  int warmupSteps = 0;
  bool cosine = false;         // decay to 0 over totalSteps (set by the trainer)
  long totalSteps = 0;
};

class Sgd {
 public:
  Sgd(std::vector<Param> params, SgdConfig cfg, int nranks);
  double lrAt(long step) const;
  // Sharded (--shard-optimizer): step() updates only this rank's pieces and
  // the tails of `layout` (ddp/shard_layout.h); the momentum of the rest is
  // never read.  The default updates everything.
  void shard(const ShardLayout& layout);
  void step(long stepIndex);
  // Momentum buffers, named "<param>.momentum", for checkpoints.
  std::vector<Param> state();

 private:
  std::vector<Param> params_;
  SgdConfig cfg_;
  int nranks_;
  std::vector<std::vector<float>> velocity_;
  std::vector<std::vector<std::pair<size_t, size_t>>> ranges_;  // per param: [begin, end) updated
  std::vector<std::string> names_;
};

}  // namespace coll::train
