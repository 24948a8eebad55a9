#include "train/options.h"

#include <cstdlib>
#include <cstring>
#include <functional>
#include <map>

namespace coll::train {
namespace {

Result<double> number(const char* flag, const char* text, double min, double max) {
  char* end = nullptr;
  double v = strtod(text, &end);
  if (end == text || *end != '\0' || v < min || v > max)
    return makeError(collInvalidArgument, "{} {}: want a number in [{}, {}]", flag, text, min, max);
  return v;
}

}  // namespace

const char* usage() {
  return "usage: coll-train [options]   (start N ranks with collrun -n N, torchrun, mpirun or srun)\n"
         "  --model mlp|resnet       model (default mlp: 784-1024-1024-10; resnet: width 16, 3 blocks)\n"
         "  --hidden A,B,...         MLP hidden sizes          --width W --blocks K  ResNet size\n"
         "  --epochs E               epochs (default 1)         --batch B   per-rank batch (default 64)\n"
         "  --accum M                micro-steps per optimizer step (gradient accumulation)\n"
         "  --lr X --momentum X --wd X   SGD (default 0.05, 0.9, 5e-4)\n"
         "  --lr-scale linear        lr x nranks              --warmup-steps W  linear warm-up\n"
         "  --lr-schedule cosine     decay lr to 0 along a half cosine over the run (default constant)\n"
         "  --bucket-mb X            gradient bucket size (default 25)\n"
         "  --sync-bn                all-reduce batch-norm statistics (default: per rank)\n"
         "  --shard-optimizer        ZeRO-1: reduce-scatter the gradients, each rank updates 1/N of every\n"
         "                           tensor, all-gather the parameters (default: all-reduce, full update)\n"
         "  --drop-last              skip each epoch's last incomplete global batch (default: every sample\n"
         "                           is trained on once per epoch, the last step with fewer samples)\n"
         "  --data DIR               Fashion-MNIST IDX files (default /usr/share/datasets/fashion-mnist)\n"
         "  --limit-train N --limit-test N   use the first N samples only\n"
         "  --seed S                 init, shuffling (default 1)\n"
         "  --checkpoint PATH [--checkpoint-every STEPS] [--resume]   rank 0 writes, atomically\n"
         "  --stop-after-steps N     stop once N steps ran (after a checkpoint): resume tests\n"
         "  --csv PATH --plot PNG    loss curve (plot: python3-matplotlib)\n"
         "  --log-every N            steps between progress lines (default 50)\n"
         "  --check-grads [--check-steps K]   N ranks x batch B against one process with batch N*B\n"
         "  --dump-params PATH       rank 0 writes the final parameters (raw float32)\n";
}

Result<TrainOptions> parseOptions(int argc, char** argv) {
  TrainOptions o;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto value = [&](const char* flag) -> Result<const char*> {
      if (i + 1 >= argc) return makeError(collInvalidArgument, "{} needs a value", flag);
      return static_cast<const char*>(argv[++i]);
    };
#define COLL_TAKE(var)                   \
  auto var##R = value(a.c_str());        \
  COLL_CHECK(var##R.status());           \
  const char* var = var##R.value();
    if (a == "-h" || a == "--help") {
      o.help = true;
      return o;
    }
    if (a == "--model") {
      COLL_TAKE(v);
      if (strcmp(v, "mlp") != 0 && strcmp(v, "resnet") != 0)
        return makeError(collInvalidArgument, "--model {}: want mlp or resnet", v);
      o.model.kind = v;
    } else if (a == "--hidden") {
      COLL_TAKE(v);
      o.model.mlpHidden.clear();
      std::string s = v;
      size_t pos = 0;
      while (pos <= s.size()) {
        size_t comma = s.find(',', pos);
        if (comma == std::string::npos) comma = s.size();
        auto n = number("--hidden", s.substr(pos, comma - pos).c_str(), 1, 65536);
        COLL_CHECK(n.status());
        o.model.mlpHidden.push_back(static_cast<int>(n.value()));
        pos = comma + 1;
      }
    } else {
      // Numeric flags: name -> (min, max, setter).
      struct Num {
        double min, max;
        std::function<void(double)> set;
      };
      std::map<std::string, Num> nums = {
          {"--width", {1, 1024, [&](double v) { o.model.resnetWidth = static_cast<int>(v); }}},
          {"--blocks", {1, 16, [&](double v) { o.model.resnetBlocks = static_cast<int>(v); }}},
          {"--epochs", {0, 1e6, [&](double v) { o.epochs = static_cast<int>(v); }}},
          {"--batch", {1, 1 << 20, [&](double v) { o.batch = static_cast<int>(v); }}},
          {"--accum", {1, 1024, [&](double v) { o.accumSteps = static_cast<int>(v); }}},
          {"--lr", {0, 100, [&](double v) { o.sgd.lr = v; }}},
          {"--momentum", {0, 1, [&](double v) { o.sgd.momentum = v; }}},
          {"--wd", {0, 1, [&](double v) { o.sgd.weightDecay = v; }}},
          {"--warmup-steps", {0, 1e9, [&](double v) { o.sgd.warmupSteps = static_cast<int>(v); }}},
          {"--bucket-mb", {0.001, 4096, [&](double v) { o.bucketMB = v; }}},
          {"--limit-train", {0, 1e9, [&](double v) { o.limitTrain = static_cast<long>(v); }}},
          {"--limit-test", {0, 1e9, [&](double v) { o.limitTest = static_cast<long>(v); }}},
          {"--seed", {0, 1e18, [&](double v) { o.seed = static_cast<uint64_t>(v); }}},
          {"--checkpoint-every", {0, 1e9, [&](double v) { o.checkpointEvery = static_cast<long>(v); }}},
          {"--stop-after-steps", {0, 1e12, [&](double v) { o.stopAfterSteps = static_cast<long>(v); }}},
          {"--log-every", {1, 1e9, [&](double v) { o.logEvery = static_cast<int>(v); }}},
          {"--check-steps", {0, 1e6, [&](double v) { o.checkSteps = static_cast<int>(v); }}},
      };
      auto it = nums.find(a);
      if (it != nums.end()) {
        COLL_TAKE(v);
        auto n = number(a.c_str(), v, it->second.min, it->second.max);
        COLL_CHECK(n.status());
        it->second.set(n.value());
      } else if (a == "--lr-scale") {
        COLL_TAKE(v);
        if (strcmp(v, "linear") != 0 && strcmp(v, "none") != 0)
          return makeError(collInvalidArgument, "--lr-scale {}: want linear or none", v);
        o.sgd.linearScaling = strcmp(v, "linear") == 0;
      } else if (a == "--lr-schedule") {
        COLL_TAKE(v);
        if (strcmp(v, "cosine") != 0 && strcmp(v, "constant") != 0)
          return makeError(collInvalidArgument, "--lr-schedule {}: want constant or cosine", v);
        o.sgd.cosine = strcmp(v, "cosine") == 0;
      } else if (a == "--sync-bn") {
        o.syncBatchNorm = true;
      } else if (a == "--shard-optimizer") {
        o.shardOptimizer = true;
      } else if (a == "--drop-last") {
        o.dropLast = true;
      } else if (a == "--resume") {
        o.resume = true;
      } else if (a == "--check-grads") {
        o.checkGrads = true;
      } else if (a == "--data" || a == "--checkpoint" || a == "--csv" || a == "--plot" || a == "--dump-params") {
        COLL_TAKE(v);
        (a == "--data" ? o.dataDir : a == "--checkpoint" ? o.checkpoint : a == "--csv" ? o.csv
                                   : a == "--plot"       ? o.plot
                                                         : o.dumpParams) = v;
      } else {
        return makeError(collInvalidArgument, "unknown option '{}' (--help lists them)", a);
      }
    }
#undef COLL_TAKE
  }
  o.model.seed = o.seed;
  if (o.resume && o.checkpoint.empty()) return makeError(collInvalidArgument, "--resume needs --checkpoint PATH");
  return o;
}

}  // namespace coll::train
