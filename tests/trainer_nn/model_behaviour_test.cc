// model_behaviour_test.cc — the float Model interface: onGradReady order and
// finality, synchronized batch norm (one rank, and two ranks as threads vs the
// full batch), determinism, init, loss/accuracy helpers, errors, and that a
// few SGD steps learn.
#include <catch2/catch.hpp>

#include <algorithm>
#include <barrier>
#include <cmath>
#include <cstring>
#include <limits>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "nn/layers.h"
#include "nn/model.h"
#include "nn/net.h"

using namespace coll::train;
using coll::train::nn::Rng;

namespace {

ModelConfig mlpCfg(std::vector<int> hidden = {32, 16}, uint64_t seed = 3) {
  ModelConfig c;
  c.kind = "mlp";
  c.mlpHidden = std::move(hidden);
  c.seed = seed;
  return c;
}

ModelConfig resnetCfg(int width = 4, int blocks = 3, uint64_t seed = 3) {
  ModelConfig c;
  c.kind = "resnet";
  c.resnetWidth = width;
  c.resnetBlocks = blocks;
  c.seed = seed;
  return c;
}

template <class T>
struct Batch {
  std::vector<T> x;
  std::vector<int> labels;
};

template <class T>
Batch<T> makeBatch(int batch, uint64_t seed) {
  Rng rng(seed);
  Batch<T> b;
  b.x.resize(size_t(batch) * kImagePixels);
  for (auto& v : b.x) v = T(rng.normal());
  b.labels.resize(batch);
  for (auto& l : b.labels) l = int(rng.next() % kNumClasses);
  return b;
}

std::vector<std::vector<float>> grads(Model& m) {
  std::vector<std::vector<float>> g;
  for (auto& p : m.params()) g.emplace_back(p.grad, p.grad + p.count);
  return g;
}

std::vector<std::vector<float>> values(const std::vector<Param>& ps) {
  std::vector<std::vector<float>> v;
  for (auto& p : ps) v.emplace_back(p.value, p.value + p.count);
  return v;
}

bool bitEqual(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

// One forward + loss + backward; returns the logits.
std::vector<float> step(Model& m, const Batch<float>& b, int batch, double divisor,
                        const BatchNormSync* sync = nullptr, const std::function<void(int)>& ready = {}) {
  std::vector<float> logits(size_t(batch) * kNumClasses), dl(logits.size());
  m.forward(b.x.data(), batch, logits.data(), true, sync);
  softmaxCrossEntropy(logits.data(), b.labels.data(), batch, divisor, dl.data());
  m.backward(dl.data(), batch, ready);
  return logits;
}

// Sums n doubles across two threads ("ranks"), fixed order rank 0 + rank 1.
struct TwoRankSum {
  std::barrier<> bar{2};
  std::vector<double> slot[2];
  void allReduce(int rank, double* v, size_t n) {
    slot[rank].assign(v, v + n);
    bar.arrive_and_wait();
    for (size_t i = 0; i < n; ++i) v[i] = slot[0][i] + slot[1][i];
    bar.arrive_and_wait();  // nobody refills a slot before both have read
  }
};

}  // namespace

TEST_CASE("param names, counts, buffers", "[model]") {
  auto mlp = makeModel(ModelConfig{});
  CHECK(std::string(mlp->name()) == "mlp");
  auto ps = mlp->params();
  REQUIRE(ps.size() == 6);
  CHECK(ps[0].name == "fc1.weight");
  CHECK(ps[0].count == 784u * 1024);
  CHECK(ps[1].name == "fc1.bias");
  CHECK(ps[3].count == 1024u);
  CHECK(ps[4].count == 10240u);
  CHECK(ps[5].name == "fc3.bias");
  CHECK(mlp->buffers().empty());

  ModelConfig rc;
  rc.kind = "resnet";
  auto res = makeModel(rc);  // default: width 16, 3 blocks
  CHECK(std::string(res->name()) == "resnet");
  auto rp = res->params();
  REQUIRE(rp.size() == 3 + 6 + 9 + 9 + 2);
  CHECK(rp[0].name == "stem.conv.weight");
  CHECK(rp[0].count == 16u * 9);
  CHECK(rp[3].name == "block1.conv1.weight");
  CHECK(rp[15].name == "block2.shortcut.conv.weight");
  CHECK(rp[15].count == 32u * 16);
  CHECK(rp.back().name == "fc.bias");
  CHECK(rp[rp.size() - 2].count == 64u * 10);
  std::set<std::string> names;
  size_t total = 0;
  for (auto& p : rp) {
    names.insert(p.name);
    total += p.count;
    CHECK(p.grad != nullptr);
  }
  CHECK(names.size() == rp.size());
  INFO("resnet params: " << total);
  CHECK(total == 77754);  // a small model (trainer/README.md quotes this)
  auto bufs = res->buffers();
  REQUIRE(bufs.size() == 2 * (1 + 2 + 3 + 3));
  CHECK(bufs[0].name == "stem.bn.running_mean");
  CHECK(bufs[1].name == "stem.bn.running_var");
  for (auto& b : bufs) CHECK(b.grad == nullptr);
  // params() is stable.
  auto rp2 = res->params();
  for (size_t i = 0; i < rp.size(); ++i) CHECK(rp2[i].value == rp[i].value);
}

TEST_CASE("bad configs and misuse throw", "[model]") {
  ModelConfig c;
  c.kind = "transformer";
  CHECK_THROWS_AS(makeModel(c), std::invalid_argument);
  CHECK_THROWS_AS(makeModel(mlpCfg({16, 0})), std::invalid_argument);
  CHECK_THROWS_AS(makeModel(resnetCfg(0, 2)), std::invalid_argument);
  CHECK_THROWS_AS(makeModel(resnetCfg(4, 0)), std::invalid_argument);
  auto m = makeModel(mlpCfg());
  std::vector<float> dl(4 * kNumClasses);
  CHECK_THROWS_AS(m->backward(dl.data(), 4, {}), std::logic_error);  // before forward
  auto b = makeBatch<float>(4, 1);
  std::vector<float> logits(4 * kNumClasses);
  CHECK_THROWS_AS(m->forward(b.x.data(), -1, logits.data(), true), std::invalid_argument);
  m->forward(b.x.data(), 4, logits.data(), true);
  CHECK_THROWS_AS(m->backward(dl.data(), 3, {}), std::logic_error);  // batch mismatch
  const int bad = 10;
  CHECK_THROWS_AS(softmaxCrossEntropy(logits.data(), &bad, 1, 1.0, nullptr), std::invalid_argument);
}

TEST_CASE("softmaxCrossEntropy and countCorrect", "[model][loss]") {
  std::vector<float> logits(3 * kNumClasses, 0.0f);
  const std::vector<int> labels{0, 4, 9};
  std::vector<float> dl(logits.size());
  CHECK(softmaxCrossEntropy(logits.data(), labels.data(), 3, 3.0, dl.data()) == Approx(std::log(10.0)));
  CHECK(softmaxCrossEntropy(logits.data(), labels.data(), 3, 6.0, nullptr) == Approx(std::log(10.0) / 2));
  CHECK(dl[0] == Approx((0.1 - 1) / 3));
  CHECK(dl[1] == Approx(0.1 / 3));
  for (int n = 0; n < 3; ++n) {
    double s = 0;
    for (int j = 0; j < kNumClasses; ++j) s += dl[n * kNumClasses + j];
    CHECK(s == Approx(0.0).margin(1e-7));
  }
  // All zeros: the first maximum (class 0) wins ties.
  CHECK(countCorrect(logits.data(), labels.data(), 3) == 1);
  logits[1 * kNumClasses + 4] = 1.0f;
  logits[2 * kNumClasses + 9] = 2.0f;
  logits[2 * kNumClasses + 3] = 3.0f;
  CHECK(countCorrect(logits.data(), labels.data(), 3) == 2);
}

TEST_CASE("onGradReady: once per param, reverse order, each grad final when called", "[model][ready]") {
  for (auto cfg : {mlpCfg(), resnetCfg(4, 3), resnetCfg(3, 4), ModelConfig{}, resnetCfg(16, 3)}) {
    SECTION(cfg.kind + " " + std::to_string(cfg.resnetWidth) + "x" + std::to_string(cfg.resnetBlocks) +
            (cfg.kind == "mlp" ? " hidden " + std::to_string(cfg.mlpHidden[0]) : "")) {
      auto m = makeModel(cfg);
      auto ps = m->params();
      const int batch = 3;
      auto b = makeBatch<float>(batch, 9);
      // Poison the grads: backward must overwrite every element.
      for (auto& p : ps) std::fill_n(p.grad, p.count, std::numeric_limits<float>::quiet_NaN());
      std::vector<int> order;
      std::vector<std::vector<float>> atCall(ps.size());
      step(*m, b, batch, batch, nullptr, [&](int i) {
        order.push_back(i);
        REQUIRE(i >= 0);
        REQUIRE(size_t(i) < ps.size());
        atCall[i].assign(ps[i].grad, ps[i].grad + ps[i].count);
      });
      REQUIRE(order.size() == ps.size());
      for (size_t k = 0; k < order.size(); ++k) CHECK(order[k] == int(ps.size() - 1 - k));
      const auto final = grads(*m);
      for (size_t i = 0; i < ps.size(); ++i) {
        INFO(ps[i].name);
        CHECK(bitEqual(atCall[i], final[i]));
        bool finite = true;
        for (float v : final[i]) finite = finite && std::isfinite(v);
        CHECK(finite);
      }
      // Overwrite, not accumulate: a second identical step gives the same grads.
      step(*m, b, batch, batch);
      const auto again = grads(*m);
      for (size_t i = 0; i < ps.size(); ++i) CHECK(bitEqual(again[i], final[i]));
    }
  }
}

TEST_CASE("makeModel: same seed -> identical params, other seed -> different", "[model][determinism]") {
  for (auto cfg : {mlpCfg({64, 32}, 7), resnetCfg(8, 3, 7)}) {
    auto a = makeModel(cfg), b = makeModel(cfg);
    auto va = values(a->params()), vb = values(b->params());
    REQUIRE(va.size() == vb.size());
    for (size_t i = 0; i < va.size(); ++i) CHECK(bitEqual(va[i], vb[i]));
    CHECK(values(a->buffers()) == values(b->buffers()));
    cfg.seed = 8;
    auto c = makeModel(cfg);
    CHECK_FALSE(bitEqual(values(c->params())[0], va[0]));
  }
}

TEST_CASE("determinism: forward/backward bit-identical run to run and model to model", "[model][determinism]") {
  for (auto cfg : {mlpCfg({128, 64}), resnetCfg(8, 3)}) {
    SECTION(cfg.kind) {
      const int batch = 6;
      auto b = makeBatch<float>(batch, 21);
      auto m1 = makeModel(cfg), m2 = makeModel(cfg);
      const auto l1 = step(*m1, b, batch, batch);
      const auto g1 = grads(*m1);
      const auto l1again = step(*m1, b, batch, batch);
      const auto g1again = grads(*m1);
      const auto l2 = step(*m2, b, batch, batch);
      const auto g2 = grads(*m2);
      CHECK(bitEqual(l1, l1again));
      CHECK(bitEqual(l1, l2));
      for (size_t i = 0; i < g1.size(); ++i) {
        CHECK(bitEqual(g1[i], g1again[i]));
        CHECK(bitEqual(g1[i], g2[i]));
      }
      if (cfg.kind == "resnet") CHECK(values(m1->buffers()) != values(m2->buffers()));  // m1 took 2 steps
      std::vector<float> e1(batch * kNumClasses), e2(e1.size());
      m2->forward(b.x.data(), batch, e2.data(), true);  // now both took two
      CHECK(values(m1->buffers()) == values(m2->buffers()));
      m1->forward(b.x.data(), batch, e1.data(), false);
      m2->forward(b.x.data(), batch, e2.data(), false);
      CHECK(bitEqual(e1, e2));
    }
  }
}

TEST_CASE("BatchNormSync on one rank (sum = identity) == no sync, bit for bit", "[model][bnsync]") {
  const int batch = 5;
  auto b = makeBatch<float>(batch, 31);
  auto plain = makeModel(resnetCfg(4, 3));
  auto synced = makeModel(resnetCfg(4, 3));
  std::vector<size_t> fwdSizes, bwdSizes;
  bool inBackward = false;
  BatchNormSync sync;
  sync.allReduceSum = [&](double* v, size_t n) {
    (inBackward ? bwdSizes : fwdSizes).push_back(n);
    for (size_t i = 0; i < n; ++i) v[i] *= 1.0;  // one rank: the sum is the value
  };
  const auto l1 = step(*plain, b, batch, batch);
  std::vector<float> l2(batch * kNumClasses), dl(l2.size());
  synced->forward(b.x.data(), batch, l2.data(), true, &sync);
  softmaxCrossEntropy(l2.data(), b.labels.data(), batch, batch, dl.data());
  inBackward = true;
  synced->backward(dl.data(), batch, {});
  CHECK(bitEqual(l1, l2));
  const auto g1 = grads(*plain), g2 = grads(*synced);
  for (size_t i = 0; i < g1.size(); ++i) CHECK(bitEqual(g1[i], g2[i]));
  CHECK(values(plain->buffers()) == values(synced->buffers()));
  // Every BN layer calls once in forward (2C+1: sums, squares, count) and once
  // in backward (2C), in reverse order.  Widths: stem 4, block1 4, block2 8, block3 16.
  const std::vector<size_t> fwd{9, 9, 9, 17, 17, 17, 33, 33, 33};
  CHECK(fwdSizes == fwd);
  const std::vector<size_t> bwd{32, 32, 32, 16, 16, 16, 8, 8, 8};
  CHECK(bwdSizes == bwd);
  // Eval mode and the MLP never call it.
  fwdSizes.clear();
  synced->forward(b.x.data(), batch, l2.data(), false, &sync);
  auto mlp = makeModel(mlpCfg());
  mlp->forward(b.x.data(), batch, l2.data(), true, &sync);
  CHECK(fwdSizes.empty());
}

namespace {

// The full batch on one model (no sync) vs its two halves on two models
// (threads) whose BN statistics are summed through BatchNormSync.  Loss
// divisor = the full batch, so the halves' grads add up to the full one.
template <class T>
void twoRanksVsFullBatch(double logitTol, double gradTol) {
  const int full = 8, half = 4;
  auto b = makeBatch<T>(full, 41);
  const ModelConfig cfg = resnetCfg(4, 3, 11);
  auto ref = nn::makeNet<T>(cfg);
  ref->computeInputGrad = true;
  std::vector<T> logits(full * kNumClasses), dl(logits.size());
  ref->forward(b.x.data(), full, logits.data(), true, nullptr);
  nn::softmaxCE(logits.data(), b.labels.data(), full, kNumClasses, double(full), dl.data());
  ref->backward(dl.data(), full, {});

  TwoRankSum sum;
  std::unique_ptr<nn::Net<T>> rank[2] = {nn::makeNet<T>(cfg), nn::makeNet<T>(cfg)};
  std::vector<T> rl[2];
  std::thread th[2];
  for (int r = 0; r < 2; ++r) {
    th[r] = std::thread([&, r] {
      BatchNormSync sync;
      sync.allReduceSum = [&](double* v, size_t n) { sum.allReduce(r, v, n); };
      rank[r]->computeInputGrad = true;
      rl[r].resize(half * kNumClasses);
      std::vector<T> d(rl[r].size());
      const T* x = b.x.data() + size_t(r) * half * kImagePixels;
      rank[r]->forward(x, half, rl[r].data(), true, &sync);
      nn::softmaxCE(rl[r].data(), b.labels.data() + r * half, half, kNumClasses, double(full), d.data());
      rank[r]->backward(d.data(), half, {});
    });
  }
  for (auto& t : th) t.join();

  // Forward: each half's logits are the full batch's rows.
  double maxLogitDiff = 0;
  for (int r = 0; r < 2; ++r)
    for (size_t i = 0; i < rl[r].size(); ++i)
      maxLogitDiff = std::max(maxLogitDiff, std::abs(double(rl[r][i]) - double(logits[r * half * kNumClasses + i])));
  INFO("max logit difference " << maxLogitDiff);
  CHECK(maxLogitDiff <= logitTol);
  // Backward: the two ranks' grads sum to the full batch's.
  const auto& pr = ref->params();
  for (size_t i = 0; i < pr.size(); ++i) {
    double scale = 0, diff = 0;
    for (size_t k = 0; k < pr[i].count; ++k) {
      const double s = double(rank[0]->params()[i].grad[k]) + double(rank[1]->params()[i].grad[k]);
      scale = std::max(scale, std::abs(double(pr[i].grad[k])));
      diff = std::max(diff, std::abs(s - double(pr[i].grad[k])));
    }
    INFO(pr[i].name << ": max |sum of halves - full| " << diff << ", max |full| " << scale);
    CHECK(diff <= gradTol * std::max(scale, 1e-3));
  }
  // Input grads: each rank's rows of the full batch's.
  double dxDiff = 0, dxScale = 0;
  for (int r = 0; r < 2; ++r)
    for (size_t i = 0; i < size_t(half) * kImagePixels; ++i) {
      const double f = double(ref->inputGrad()[r * half * kImagePixels + i]);
      dxScale = std::max(dxScale, std::abs(f));
      dxDiff = std::max(dxDiff, std::abs(double(rank[r]->inputGrad()[i]) - f));
    }
  INFO("input grad: max diff " << dxDiff << ", max " << dxScale);
  CHECK(dxDiff <= gradTol * dxScale);
  // Running statistics: identical on both ranks, equal to the full batch's.
  const auto& b0 = rank[0]->buffers();
  for (size_t i = 0; i < b0.size(); ++i)
    for (size_t k = 0; k < b0[i].count; ++k) {
      CHECK(b0[i].value[k] == rank[1]->buffers()[i].value[k]);
      CHECK(double(b0[i].value[k]) == Approx(double(ref->buffers()[i].value[k])).epsilon(gradTol).margin(1e-12));
    }
}

}  // namespace

TEST_CASE("BatchNormSync, 2 ranks on half batches == full batch without sync (float)", "[model][bnsync]") {
  twoRanksVsFullBatch<float>(1e-5, 1e-4);
}

TEST_CASE("BatchNormSync, 2 ranks on half batches == full batch without sync (double)", "[model][bnsync]") {
  twoRanksVsFullBatch<double>(1e-12, 1e-10);
}

TEST_CASE("batch 0: zero grads, every onGradReady, and the BN syncs still happen", "[model][bnsync]") {
  // Rank 0 takes the whole batch, rank 1 an empty one: rank 0 == the full
  // batch without sync, rank 1's grads are zero.
  const int full = 6;
  auto b = makeBatch<float>(full, 61);
  const ModelConfig cfg = resnetCfg(4, 3, 12);
  auto ref = makeModel(cfg);
  const auto lref = step(*ref, b, full, full);
  TwoRankSum sum;
  std::unique_ptr<Model> rank[2] = {makeModel(cfg), makeModel(cfg)};
  std::vector<float> rl[2];
  std::vector<int> ready[2];
  int calls[2] = {0, 0};
  std::thread th[2];
  for (int r = 0; r < 2; ++r) {
    th[r] = std::thread([&, r] {
      BatchNormSync sync;
      sync.allReduceSum = [&](double* v, size_t n) {
        ++calls[r];
        sum.allReduce(r, v, n);
      };
      const int mine = r == 0 ? full : 0;
      rl[r] = step(*rank[r], b, mine, full, &sync, [&](int i) { ready[r].push_back(i); });
    });
  }
  for (auto& t : th) t.join();
  CHECK(calls[0] == 18);  // 9 BN layers, forward and backward
  CHECK(calls[1] == 18);
  CHECK(bitEqual(rl[0], lref));
  CHECK(rl[1].empty());
  const auto gref = grads(*ref), g0 = grads(*rank[0]), g1 = grads(*rank[1]);
  for (size_t i = 0; i < gref.size(); ++i) {
    CHECK(bitEqual(g0[i], gref[i]));
    CHECK(std::all_of(g1[i].begin(), g1[i].end(), [](float v) { return v == 0.0f; }));
  }
  CHECK(ready[0].size() == gref.size());
  CHECK(ready[1] == ready[0]);
  CHECK(values(rank[1]->buffers()) == values(rank[0]->buffers()));  // global statistics on both
  // The MLP too (no BN): zero grads.
  auto mlp = makeModel(mlpCfg());
  for (auto& p : mlp->params()) std::fill_n(p.grad, p.count, 1.0f);
  step(*mlp, b, 0, full);
  for (const auto& g : grads(*mlp)) CHECK(std::all_of(g.begin(), g.end(), [](float v) { return v == 0.0f; }));
}

TEST_CASE("without BatchNormSync, half batches use their own statistics (differ)", "[model][bnsync]") {
  const int full = 8, half = 4;
  auto b = makeBatch<float>(full, 41);
  auto ref = makeModel(resnetCfg(4, 3, 11)), h = makeModel(resnetCfg(4, 3, 11));
  std::vector<float> lf(full * kNumClasses), lh(half * kNumClasses);
  ref->forward(b.x.data(), full, lf.data(), true);
  h->forward(b.x.data(), half, lh.data(), true);
  double d = 0;
  for (size_t i = 0; i < lh.size(); ++i) d = std::max(d, double(std::abs(lh[i] - lf[i])));
  CHECK(d > 1e-3);
}

TEST_CASE("a few SGD steps fit a small batch (float path learns)", "[model][train]") {
  for (auto cfg : {mlpCfg({64}), resnetCfg(4, 2)}) {
    SECTION(cfg.kind) {
      // Learnable data: class k is a grating of its own frequency and
      // orientation (random phase) plus noise; a conv net with global pooling
      // and an MLP can both tell them apart.
      const int batch = 32;
      auto b = makeBatch<float>(batch, 51);
      Rng rng(52);
      const double fx[kNumClasses] = {1, 0, 1, 2, 0, 2, 3, 1, 3, 0};
      const double fy[kNumClasses] = {0, 1, 1, 0, 2, 2, 0, 3, 1, 3};
      for (int n = 0; n < batch; ++n) {
        const int k = b.labels[n];
        const double phase = rng.uniform(0, 6.283185307179586);
        for (int y = 0; y < kImageSide; ++y)
          for (int x = 0; x < kImageSide; ++x) {
            float& px = b.x[size_t(n) * kImagePixels + y * kImageSide + x];
            px = float(std::sin(6.283185307179586 * (fx[k] * x + fy[k] * y) / 14 + phase) + 0.3 * px);
          }
      }
      auto m = makeModel(cfg);
      auto ps = m->params();
      std::vector<std::vector<float>> velocity;
      for (auto& p : ps) velocity.emplace_back(p.count, 0.0f);
      std::vector<float> logits(batch * kNumClasses), dl(logits.size());
      double first = 0, last = 0;
      for (int it = 0; it < 60; ++it) {  // SGD, momentum 0.9, lr 0.05
        m->forward(b.x.data(), batch, logits.data(), true);
        last = softmaxCrossEntropy(logits.data(), b.labels.data(), batch, batch, dl.data());
        if (it == 0) first = last;
        m->backward(dl.data(), batch, {});
        for (size_t i = 0; i < ps.size(); ++i)
          for (size_t k = 0; k < ps[i].count; ++k) {
            velocity[i][k] = 0.9f * velocity[i][k] + ps[i].grad[k];
            ps[i].value[k] -= 0.05f * velocity[i][k];
          }
      }
      INFO("loss " << first << " -> " << last);
      CHECK(last < 0.25 * first);
      m->forward(b.x.data(), batch, logits.data(), true);
      CHECK(countCorrect(logits.data(), b.labels.data(), batch) >= batch - 4);
    }
  }
}
