// nn_bench.cc — ms per training step (forward + loss + backward) of the MLP
// and the ResNet at batch 64 and 128, one thread.  Not a test.
//   coll_trainer_nn_bench [--steps N] [--model mlp|resnet] [--batch B]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "nn/layers.h"
#include "nn/model.h"

using coll::train::ModelConfig;

namespace {

struct Timing {
  double fwd = 0, bwd = 0;
};

Timing bench(const std::string& kind, int batch, int steps) {
  ModelConfig cfg;
  cfg.kind = kind;
  auto model = coll::train::makeModel(cfg);
  coll::train::nn::Rng rng(42);
  std::vector<float> x(size_t(batch) * coll::train::kImagePixels);
  for (auto& v : x) v = float(rng.normal());
  std::vector<int> labels(batch);
  for (auto& l : labels) l = int(rng.next() % 10);
  std::vector<float> logits(size_t(batch) * 10), dlogits(logits.size());
  using Clock = std::chrono::steady_clock;
  auto step = [&](Timing* t) {
    const auto t0 = Clock::now();
    model->forward(x.data(), batch, logits.data(), true);
    coll::train::softmaxCrossEntropy(logits.data(), labels.data(), batch, batch, dlogits.data());
    const auto t1 = Clock::now();
    model->backward(dlogits.data(), batch, {});
    const auto t2 = Clock::now();
    if (t) {
      t->fwd = std::chrono::duration<double, std::milli>(t1 - t0).count();
      t->bwd = std::chrono::duration<double, std::milli>(t2 - t1).count();
    }
  };
  step(nullptr);  // warm-up: buffers, BLAS
  step(nullptr);
  Timing sum;
  for (int i = 0; i < steps; ++i) {
    Timing t;
    step(&t);
    sum.fwd += t.fwd;
    sum.bwd += t.bwd;
  }
  return {sum.fwd / steps, sum.bwd / steps};
}

}  // namespace

int main(int argc, char** argv) {
  int steps = 0;
  std::vector<std::string> kinds{"mlp", "resnet"};
  std::vector<int> batches{64, 128};
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--steps") && i + 1 < argc) {
      steps = std::atoi(argv[++i]);
    } else if (!std::strcmp(argv[i], "--model") && i + 1 < argc) {
      kinds = {argv[++i]};
    } else if (!std::strcmp(argv[i], "--batch") && i + 1 < argc) {
      batches = {std::atoi(argv[++i])};
    } else {
      std::fprintf(stderr, "usage: %s [--steps N] [--model mlp|resnet] [--batch B]\n", argv[0]);
      return 2;
    }
  }
  std::printf("# gemm: %s; default models (mlp 784-1024-1024-10, resnet width 16, 3 blocks)\n",
              coll::train::gemmBackend());
  std::printf("# %-7s %6s %10s %10s %10s\n", "model", "batch", "fwd_ms", "bwd_ms", "step_ms");
  for (const auto& kind : kinds) {
    for (int b : batches) {
      const int n = steps > 0 ? steps : (kind == "mlp" ? 20 : 5);
      const Timing t = bench(kind, b, n);
      std::printf("  %-7s %6d %10.2f %10.2f %10.2f\n", kind.c_str(), b, t.fwd, t.bwd, t.fwd + t.bwd);
      std::fflush(stdout);
    }
  }
  return 0;
}
