// models_grad_test.cc — both whole models in float64 (the same templates the
// float models run), central differences on a random sample of every param
// tensor's elements and of the input, loss = softmax-CE summed over the batch.
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "grad_check.h"
#include "nn/net.h"

using namespace coll::train;
using namespace coll::train::nn;
using gradcheck::kMaxRel;

namespace {

// Checks every param tensor (up to `perTensor` sampled elements each) and
// `inputs` sampled input elements.
void checkNet(Net<double>& net, int batch, size_t perTensor, size_t inputs, uint64_t seed) {
  Rng rng(seed);
  // BN affine params away from their init (1, 0) so every path is exercised.
  for (auto& p : net.params()) {
    if (p.name.find("bn") == std::string::npos) continue;
    const bool isGamma = p.name.size() > 7 && p.name.compare(p.name.size() - 7, 7, ".weight") == 0;
    for (size_t i = 0; i < p.count; ++i) p.value[i] = isGamma ? rng.uniform(0.5, 1.5) : rng.uniform(-0.5, 0.5);
  }
  auto x = gradcheck::randn(size_t(batch) * kImagePixels, rng);
  std::vector<int> labels(batch);
  for (auto& l : labels) l = int(rng.next() % kNumClasses);
  std::vector<double> logits(size_t(batch) * kNumClasses), dlogits(logits.size());
  auto loss = [&] {
    net.forward(x.data(), batch, logits.data(), true, nullptr);
    return softmaxCE(logits.data(), labels.data(), batch, kNumClasses, 1.0, (double*)nullptr);
  };
  net.forward(x.data(), batch, logits.data(), true, nullptr);
  softmaxCE(logits.data(), labels.data(), batch, kNumClasses, 1.0, dlogits.data());
  net.computeInputGrad = true;
  net.backward(dlogits.data(), batch, {});
  const std::vector<double> dx = net.inputGrad();
  REQUIRE(dx.size() == x.size());
  std::vector<std::vector<double>> grads;
  for (auto& p : net.params()) grads.emplace_back(p.grad, p.grad + p.count);
  size_t checked = 0;
  for (size_t i = 0; i < net.params().size(); ++i) {
    const auto& p = net.params()[i];
    const auto r = gradcheck::check(p.value, grads[i], gradcheck::sample(p.count, perTensor, rng), loss);
    INFO(r.describe(std::string(net.name()) + " " + p.name));
    CHECK(r.maxRel <= kMaxRel);
    checked += r.checked;
  }
  const auto r = gradcheck::check(x.data(), dx, gradcheck::sample(x.size(), inputs, rng), loss);
  INFO(r.describe(std::string(net.name()) + " input"));
  CHECK(r.maxRel <= kMaxRel);
  CHECK(checked > 0);
}

}  // namespace

TEST_CASE("MLP 784-16-10 float64: sampled params and inputs vs central differences", "[grad][model]") {
  ModelConfig cfg;
  cfg.kind = "mlp";
  cfg.mlpHidden = {16};
  cfg.seed = 5;
  auto net = makeNet<double>(cfg);
  REQUIRE(net->params().size() == 4);
  checkNet(*net, 3, 60, 60, 101);
}

TEST_CASE("MLP 784-12-8-10 float64 (two hidden layers)", "[grad][model]") {
  ModelConfig cfg;
  cfg.kind = "mlp";
  cfg.mlpHidden = {12, 8};
  auto net = makeNet<double>(cfg);
  checkNet(*net, 2, 40, 40, 102);
}

TEST_CASE("ResNet width 4, 2 blocks float64: sampled params and inputs", "[grad][model]") {
  ModelConfig cfg;
  cfg.kind = "resnet";
  cfg.resnetWidth = 4;
  cfg.resnetBlocks = 2;
  cfg.seed = 6;
  auto net = makeNet<double>(cfg);
  // stem conv+bn (3) + block1 (6) + block2 with projection (9) + fc (2)
  REQUIRE(net->params().size() == 20);
  checkNet(*net, 3, 30, 40, 103);
}

TEST_CASE("ResNet width 2, 4 blocks float64 (both downsamples, a 7x7 identity block)", "[grad][model]") {
  ModelConfig cfg;
  cfg.kind = "resnet";
  cfg.resnetWidth = 2;
  cfg.resnetBlocks = 4;
  cfg.seed = 7;
  auto net = makeNet<double>(cfg);
  REQUIRE(net->params().size() == 3 + 6 + 9 + 9 + 6 + 2);
  checkNet(*net, 2, 12, 20, 104);
}
