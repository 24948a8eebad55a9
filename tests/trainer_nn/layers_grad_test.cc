// layers_grad_test.cc — every layer type, float64, central differences on
// EVERY parameter element and EVERY input element.  Each layer's loss is
// L = sum(y * R) with a fixed random R, so the analytic input is dy = R.
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "grad_check.h"
#include "nn/layers.h"

using namespace coll::train::nn;
using gradcheck::kMaxRel;

namespace {

#define CHECK_GRAD(res, what)              \
  do {                                     \
    const auto r_ = (res);                 \
    INFO(r_.describe(what));               \
    CHECK(r_.checked > 0);                 \
    CHECK(r_.maxRel <= kMaxRel);           \
  } while (0)

// Randomizes BN affine params so every gradient path is exercised.
void randomizeBn(BatchNorm2d<double>& bn, Rng& rng) {
  for (auto& g : bn.gamma) g = rng.uniform(0.5, 1.5);
  for (auto& b : bn.beta) b = rng.uniform(-0.5, 0.5);
}

}  // namespace

TEST_CASE("linear: every weight, bias and input element", "[grad][linear]") {
  Rng rng(11);
  const int batch = 4, in = 7, out = 5;
  Linear<double> fc("fc", in, out);
  fc.init(rng, 0.5);
  auto x = gradcheck::randn(size_t(batch) * in, rng);
  const auto R = gradcheck::randn(size_t(batch) * out, rng);
  std::vector<double> y(R.size()), dx(x.size());
  auto loss = [&] {
    fc.forward(x.data(), batch, y.data());
    return gradcheck::dot(R, y.data());
  };
  loss();
  std::vector<int> order;
  fc.backward(R.data(), batch, dx.data(), [&](int i) { order.push_back(i); });
  CHECK(order == std::vector<int>{1, 0});
  const std::vector<double> dw = fc.dw, db = fc.db;
  CHECK_GRAD(gradcheck::check(fc.w.data(), dw, gradcheck::all(dw.size()), loss), "fc.weight");
  CHECK_GRAD(gradcheck::check(fc.b.data(), db, gradcheck::all(db.size()), loss), "fc.bias");
  CHECK_GRAD(gradcheck::check(x.data(), dx, gradcheck::all(dx.size()), loss), "fc input");
}

TEST_CASE("relu: every input element (away from the kink)", "[grad][relu]") {
  Rng rng(12);
  auto x = gradcheck::randn(40, rng);
  for (auto& v : x)
    if (std::abs(v) < 0.05) v = v < 0 ? -0.1 : 0.1;
  const auto R = gradcheck::randn(x.size(), rng);
  std::vector<double> y(x.size()), dx(x.size());
  auto loss = [&] {
    reluForward(x.data(), x.size(), y.data());
    return gradcheck::dot(R, y.data());
  };
  loss();
  reluBackward(y.data(), R.data(), x.size(), dx.data());
  CHECK_GRAD(gradcheck::check(x.data(), dx, gradcheck::all(x.size()), loss), "relu input");
  // In place (as the models use it).
  std::vector<double> g = R;
  reluBackward(y.data(), g.data(), g.size(), g.data());
  CHECK(g == dx);
}

TEST_CASE("conv2d: every weight and input element, strides and paddings", "[grad][conv]") {
  struct Shape {
    int cin, cout, k, stride, pad, h, w;
  };
  const Shape shapes[] = {
      {2, 3, 3, 1, 1, 5, 6},  // 3x3 same
      {2, 3, 3, 2, 1, 7, 6},  // 3x3 stride 2 (odd and even sides)
      {3, 2, 3, 1, 0, 5, 5},  // 3x3 valid
      {2, 4, 1, 2, 0, 7, 7},  // 1x1 stride 2 (projection shortcut)
      {3, 2, 1, 1, 0, 4, 3},  // 1x1 stride 1 (no im2col)
      {1, 2, 3, 3, 2, 8, 7},  // stride 3, pad 2
      {2, 2, 2, 2, 1, 5, 4},  // even kernel
  };
  Rng rng(13);
  const int batch = 2;
  for (const Shape& s : shapes) {
    const std::string what = "conv cin " + std::to_string(s.cin) + " cout " + std::to_string(s.cout) + " k " +
                             std::to_string(s.k) + " s " + std::to_string(s.stride) + " p " +
                             std::to_string(s.pad) + " " + std::to_string(s.h) + "x" + std::to_string(s.w);
    SECTION(what) {
      Conv2d<double> conv("conv", s.cin, s.cout, s.k, s.stride, s.pad, s.h, s.w);
      conv.init(rng);
      CHECK(conv.hout == (s.h + 2 * s.pad - s.k) / s.stride + 1);
      auto x = gradcheck::randn(batch * conv.inSize(), rng);
      const auto R = gradcheck::randn(batch * conv.outSize(), rng);
      std::vector<double> y(R.size()), dx(x.size());
      auto loss = [&] {
        conv.forward(x.data(), batch, y.data());
        return gradcheck::dot(R, y.data());
      };
      loss();
      int calls = 0;
      conv.backward(R.data(), batch, dx.data(), [&](int i) {
        CHECK(i == 0);
        ++calls;
      });
      CHECK(calls == 1);
      const std::vector<double> dw = conv.dw;
      CHECK_GRAD(gradcheck::check(conv.w.data(), dw, gradcheck::all(dw.size()), loss), what + " weight");
      CHECK_GRAD(gradcheck::check(x.data(), dx, gradcheck::all(dx.size()), loss), what + " input");
      // Without dx the weight grad is the same.
      conv.backward(R.data(), batch, nullptr, {});
      CHECK(conv.dw == dw);
    }
  }
}

TEST_CASE("batchnorm train mode: every gamma, beta and input element", "[grad][bn]") {
  Rng rng(14);
  for (int hw : {1, 5}) {
    SECTION("hw " + std::to_string(hw)) {
      const int batch = 4, c = 3;
      BatchNorm2d<double> bn("bn", c, hw);
      randomizeBn(bn, rng);
      auto x = gradcheck::randn(size_t(batch) * c * hw, rng, 3.0, 2.0);  // mean 2, std 3
      const auto R = gradcheck::randn(x.size(), rng);
      std::vector<double> y(x.size()), dx(x.size());
      auto loss = [&] {
        bn.forward(x.data(), batch, y.data(), true, nullptr);
        return gradcheck::dot(R, y.data());
      };
      loss();
      std::vector<int> order;
      bn.backward(R.data(), batch, dx.data(), [&](int i) { order.push_back(i); });
      CHECK(order == std::vector<int>{1, 0});
      const std::vector<double> dg = bn.dgamma, db = bn.dbeta;
      CHECK_GRAD(gradcheck::check(bn.gamma.data(), dg, gradcheck::all(c), loss), "bn.weight");
      CHECK_GRAD(gradcheck::check(bn.beta.data(), db, gradcheck::all(c), loss), "bn.bias");
      CHECK_GRAD(gradcheck::check(x.data(), dx, gradcheck::all(dx.size()), loss), "bn input");
      // dx may alias dy.
      std::vector<double> g = R;
      loss();
      bn.backward(g.data(), batch, g.data(), {});
      CHECK(g == dx);
    }
  }
}

TEST_CASE("batchnorm eval mode: running statistics, gradients", "[grad][bn]") {
  Rng rng(15);
  const int batch = 3, c = 2, hw = 4;
  BatchNorm2d<double> bn("bn", c, hw);
  randomizeBn(bn, rng);
  auto x = gradcheck::randn(size_t(batch) * c * hw, rng, 2.0, 1.0);
  std::vector<double> y(x.size()), dx(x.size());
  // One train step moves the running stats by momentum 0.1 towards the batch's.
  bn.forward(x.data(), batch, y.data(), true, nullptr);
  for (int ch = 0; ch < c; ++ch) {
    double s = 0, q = 0;
    const double cnt = batch * hw;
    for (int n = 0; n < batch; ++n)
      for (int i = 0; i < hw; ++i) s += x[(n * c + ch) * hw + i];
    const double mean = s / cnt;
    for (int n = 0; n < batch; ++n)
      for (int i = 0; i < hw; ++i) q += (x[(n * c + ch) * hw + i] - mean) * (x[(n * c + ch) * hw + i] - mean);
    CHECK(bn.runMean[ch] == Approx(0.1 * mean).epsilon(1e-12));
    CHECK(bn.runVar[ch] == Approx(0.9 + 0.1 * q / (cnt - 1)).epsilon(1e-12));
  }
  const auto R = gradcheck::randn(x.size(), rng);
  auto loss = [&] {
    bn.forward(x.data(), batch, y.data(), false, nullptr);
    return gradcheck::dot(R, y.data());
  };
  loss();
  for (int ch = 0; ch < c; ++ch)
    for (int i = 0; i < hw; ++i)
      CHECK(y[ch * hw + i] == Approx(bn.gamma[ch] * (x[ch * hw + i] - bn.runMean[ch]) /
                                         std::sqrt(bn.runVar[ch] + bn.eps) +
                                     bn.beta[ch])
                                  .epsilon(1e-12));
  bn.backward(R.data(), batch, dx.data(), {});
  const std::vector<double> dg = bn.dgamma, db = bn.dbeta;
  CHECK_GRAD(gradcheck::check(bn.gamma.data(), dg, gradcheck::all(c), loss), "bn(eval).weight");
  CHECK_GRAD(gradcheck::check(bn.beta.data(), db, gradcheck::all(c), loss), "bn(eval).bias");
  CHECK_GRAD(gradcheck::check(x.data(), dx, gradcheck::all(dx.size()), loss), "bn(eval) input");
}

TEST_CASE("global average pool: every input element", "[grad][gap]") {
  Rng rng(16);
  const int batch = 2, c = 3, hw = 6;
  auto x = gradcheck::randn(size_t(batch) * c * hw, rng);
  const auto R = gradcheck::randn(size_t(batch) * c, rng);
  std::vector<double> y(R.size()), dx(x.size());
  auto loss = [&] {
    gapForward(x.data(), batch, c, hw, y.data());
    return gradcheck::dot(R, y.data());
  };
  loss();
  gapBackward(R.data(), batch, c, hw, dx.data());
  CHECK_GRAD(gradcheck::check(x.data(), dx, gradcheck::all(dx.size()), loss), "gap input");
}

TEST_CASE("residual block with and without projection: every param and input element", "[grad][block]") {
  struct Shape {
    int cin, cout, stride, side;
    bool projection;
  };
  const Shape shapes[] = {
      {3, 3, 1, 5, false},  // identity shortcut
      {2, 4, 2, 7, true},   // downsample: stride 2, channels x2, 1x1 projection
      {2, 3, 1, 4, true},   // channel change only
  };
  Rng rng(17);
  const int batch = 3;
  for (const Shape& s : shapes) {
    const std::string what = "block " + std::to_string(s.cin) + "->" + std::to_string(s.cout) + " stride " +
                             std::to_string(s.stride) + (s.projection ? " projection" : " identity");
    SECTION(what) {
      ResidualBlock<double> blk("blk", s.cin, s.cout, s.stride, s.side, s.side);
      REQUIRE(blk.projection() == s.projection);
      blk.init(rng);
      randomizeBn(blk.bn1, rng);
      randomizeBn(blk.bn2, rng);
      if (blk.scBn) randomizeBn(*blk.scBn, rng);
      std::vector<ParamT<double>> ps;
      blk.addParams(ps);
      REQUIRE(ps.size() == (s.projection ? 9u : 6u));
      auto x = gradcheck::randn(batch * blk.inSize(), rng);
      const auto R = gradcheck::randn(batch * blk.outSize(), rng);
      std::vector<double> y(R.size()), dx(x.size());
      auto loss = [&] {
        blk.forward(x.data(), batch, y.data(), true, nullptr);
        return gradcheck::dot(R, y.data());
      };
      loss();
      std::vector<int> order;
      blk.backward(R.data(), batch, dx.data(), [&](int i) { order.push_back(i); });
      std::vector<int> expect(ps.size());
      for (size_t i = 0; i < ps.size(); ++i) expect[i] = int(ps.size() - 1 - i);
      CHECK(order == expect);
      std::vector<std::vector<double>> grads;
      for (auto& p : ps) grads.emplace_back(p.grad, p.grad + p.count);
      for (size_t i = 0; i < ps.size(); ++i)
        CHECK_GRAD(gradcheck::check(ps[i].value, grads[i], gradcheck::all(ps[i].count), loss),
                   what + " " + ps[i].name);
      CHECK_GRAD(gradcheck::check(x.data(), dx, gradcheck::all(dx.size()), loss), what + " input");
    }
  }
}

TEST_CASE("softmax cross-entropy: every logit, divisor", "[grad][loss]") {
  Rng rng(18);
  const int batch = 5, classes = 10;
  auto z = gradcheck::randn(size_t(batch) * classes, rng, 2.0);
  const std::vector<int> labels{3, 0, 9, 3, 7};
  std::vector<double> dz(z.size());
  for (double divisor : {1.0, 5.0, 12.5}) {
    auto loss = [&] { return softmaxCE(z.data(), labels.data(), batch, classes, divisor, (double*)nullptr); };
    const double l = softmaxCE(z.data(), labels.data(), batch, classes, divisor, dz.data());
    // Direct formula.
    double ref = 0;
    for (int n = 0; n < batch; ++n) {
      double se = 0;
      for (int j = 0; j < classes; ++j) se += std::exp(z[n * classes + j]);
      ref += std::log(se) - z[n * classes + labels[n]];
    }
    CHECK(l == Approx(ref / divisor).epsilon(1e-13));
    CHECK_GRAD(gradcheck::check(z.data(), dz, gradcheck::all(dz.size()), loss),
               "softmax-CE logits, divisor " + std::to_string(divisor));
  }
  // Large logits do not overflow.
  std::vector<double> big{1000.0, 0.0, -1000.0, 0, 0, 0, 0, 0, 0, 0};
  const int lab = 0;
  std::vector<double> dbig(10);
  CHECK(softmaxCE(big.data(), &lab, 1, 10, 1.0, dbig.data()) == Approx(0.0).margin(1e-12));
  CHECK(std::isfinite(dbig[2]));
}
