// layers_forward_test.cc — the forward passes against naive textbook loops
// (the gradient checks only prove backward matches forward; these prove
// forward computes the right function), in float64 and float32.
#include <catch2/catch.hpp>

#include <cmath>
#include <string>
#include <vector>

#include "grad_check.h"
#include "nn/layers.h"

using namespace coll::train::nn;

namespace {

template <class T>
std::vector<T> randv(size_t n, Rng& rng, double scale = 1.0, double shift = 0.0) {
  std::vector<T> v(n);
  for (auto& x : v) x = T(shift + scale * rng.normal());
  return v;
}

// y[n][o][oy][ox] = sum_{c,ki,kj} w[o][c][ki][kj] * x[n][c][oy*s-p+ki][ox*s-p+kj] (zero outside).
std::vector<double> naiveConv(const std::vector<double>& x, const std::vector<double>& w, int batch, int cin,
                              int cout, int k, int s, int p, int h, int wd) {
  const int ho = (h + 2 * p - k) / s + 1, wo = (wd + 2 * p - k) / s + 1;
  std::vector<double> y(size_t(batch) * cout * ho * wo, 0.0);
  for (int n = 0; n < batch; ++n)
    for (int o = 0; o < cout; ++o)
      for (int oy = 0; oy < ho; ++oy)
        for (int ox = 0; ox < wo; ++ox) {
          double acc = 0;
          for (int c = 0; c < cin; ++c)
            for (int ki = 0; ki < k; ++ki)
              for (int kj = 0; kj < k; ++kj) {
                const int iy = oy * s - p + ki, ix = ox * s - p + kj;
                if (iy < 0 || iy >= h || ix < 0 || ix >= wd) continue;
                acc += w[((size_t(o) * cin + c) * k + ki) * k + kj] * x[((size_t(n) * cin + c) * h + iy) * wd + ix];
              }
          y[((size_t(n) * cout + o) * ho + oy) * wo + ox] = acc;
        }
  return y;
}

// Train-mode batch norm: biased variance over (N, H, W).
std::vector<double> naiveBn(const std::vector<double>& x, const std::vector<double>& g, const std::vector<double>& b,
                            int batch, int c, int hw, double eps) {
  std::vector<double> y(x.size());
  for (int ch = 0; ch < c; ++ch) {
    double m = 0, v = 0;
    const double cnt = double(batch) * hw;
    for (int n = 0; n < batch; ++n)
      for (int i = 0; i < hw; ++i) m += x[(size_t(n) * c + ch) * hw + i];
    m /= cnt;
    for (int n = 0; n < batch; ++n)
      for (int i = 0; i < hw; ++i) v += std::pow(x[(size_t(n) * c + ch) * hw + i] - m, 2);
    v /= cnt;
    for (int n = 0; n < batch; ++n)
      for (int i = 0; i < hw; ++i) {
        const size_t j = (size_t(n) * c + ch) * hw + i;
        y[j] = g[ch] * (x[j] - m) / std::sqrt(v + eps) + b[ch];
      }
  }
  return y;
}

std::vector<double> relu(std::vector<double> v) {
  for (auto& x : v) x = x > 0 ? x : 0;
  return v;
}

template <class T>
double maxAbsDiff(const std::vector<T>& a, const std::vector<double>& b) {
  REQUIRE(a.size() == b.size());
  double d = 0;
  for (size_t i = 0; i < a.size(); ++i) d = std::max(d, std::abs(double(a[i]) - b[i]));
  return d;
}

template <class T>
std::vector<double> toD(const std::vector<T>& v) {
  return std::vector<double>(v.begin(), v.end());
}

}  // namespace

TEMPLATE_TEST_CASE("conv2d forward == naive convolution", "[forward][conv]", float, double) {
  struct Shape {
    int cin, cout, k, s, p, h, w;
  };
  const Shape shapes[] = {{1, 4, 3, 1, 1, 28, 28}, {3, 2, 3, 1, 1, 5, 6}, {2, 3, 3, 2, 1, 7, 6},
                          {3, 2, 3, 1, 0, 5, 5},   {2, 4, 1, 2, 0, 7, 7}, {3, 2, 1, 1, 0, 4, 3},
                          {1, 2, 3, 3, 2, 8, 7},   {2, 2, 2, 2, 1, 5, 4}, {2, 3, 5, 1, 2, 6, 6},
                          {2, 2, 3, 1, 2, 4, 4}};
  Rng rng(21);
  const double tol = sizeof(TestType) == 4 ? 1e-4 : 1e-12;
  for (const Shape& s : shapes) {
    INFO("cin " << s.cin << " cout " << s.cout << " k " << s.k << " s " << s.s << " p " << s.p << " " << s.h << "x"
                << s.w);
    const int batch = 2;
    Conv2d<TestType> conv("c", s.cin, s.cout, s.k, s.s, s.p, s.h, s.w);
    conv.init(rng);
    const auto x = randv<TestType>(batch * conv.inSize(), rng);
    std::vector<TestType> y(batch * conv.outSize());
    conv.forward(x.data(), batch, y.data());
    CHECK(maxAbsDiff(y, naiveConv(toD(x), toD(conv.w), batch, s.cin, s.cout, s.k, s.s, s.p, s.h, s.w)) <= tol);
  }
}

TEMPLATE_TEST_CASE("linear, batchnorm, pool, block forward == naive", "[forward]", float, double) {
  Rng rng(22);
  const double tol = sizeof(TestType) == 4 ? 1e-4 : 1e-12;
  SECTION("linear") {
    const int batch = 3, in = 9, out = 4;
    Linear<TestType> fc("fc", in, out);
    fc.init(rng, 1.0);
    const auto x = randv<TestType>(batch * in, rng);
    std::vector<TestType> y(batch * out);
    fc.forward(x.data(), batch, y.data());
    std::vector<double> ref(y.size());
    for (int n = 0; n < batch; ++n)
      for (int o = 0; o < out; ++o) {
        double a = fc.b[o];
        for (int i = 0; i < in; ++i) a += double(fc.w[o * in + i]) * double(x[n * in + i]);
        ref[n * out + o] = a;
      }
    CHECK(maxAbsDiff(y, ref) <= tol);
  }
  SECTION("batchnorm train") {
    const int batch = 4, c = 3, hw = 10;
    BatchNorm2d<TestType> bn("bn", c, hw);
    for (auto& g : bn.gamma) g = TestType(rng.uniform(0.5, 2));
    for (auto& b : bn.beta) b = TestType(rng.uniform(-1, 1));
    const auto x = randv<TestType>(size_t(batch) * c * hw, rng, 4.0, 10.0);  // large mean: no cancellation trouble
    std::vector<TestType> y(x.size());
    bn.forward(x.data(), batch, y.data(), true, nullptr);
    CHECK(maxAbsDiff(y, naiveBn(toD(x), toD(bn.gamma), toD(bn.beta), batch, c, hw, bn.eps)) <= 10 * tol);
  }
  SECTION("global average pool") {
    const auto x = randv<TestType>(2 * 3 * 5, rng);
    std::vector<TestType> y(6);
    gapForward(x.data(), 2, 3, 5, y.data());
    std::vector<double> ref(6, 0.0);
    for (int p = 0; p < 6; ++p)
      for (int i = 0; i < 5; ++i) ref[p] += double(x[p * 5 + i]) / 5;
    CHECK(maxAbsDiff(y, ref) <= tol);
  }
  for (bool projection : {false, true}) {
    SECTION(projection ? "block with projection" : "identity block") {
      const int batch = 3, cin = 2, cout = projection ? 4 : 2, stride = projection ? 2 : 1, side = 6;
      ResidualBlock<TestType> blk("b", cin, cout, stride, side, side);
      blk.init(rng);
      for (auto* bn : {&blk.bn1, &blk.bn2, blk.scBn.get()}) {
        if (!bn) continue;
        for (auto& g : bn->gamma) g = TestType(rng.uniform(0.5, 2));
        for (auto& b : bn->beta) b = TestType(rng.uniform(-1, 1));
      }
      const auto x = randv<TestType>(batch * blk.inSize(), rng);
      std::vector<TestType> y(batch * blk.outSize());
      blk.forward(x.data(), batch, y.data(), true, nullptr);
      const int so = blk.conv1.hout, hw = so * so;
      const auto xd = toD(x);
      auto a = relu(naiveBn(naiveConv(xd, toD(blk.conv1.w), batch, cin, cout, 3, stride, 1, side, side),
                            toD(blk.bn1.gamma), toD(blk.bn1.beta), batch, cout, hw, blk.bn1.eps));
      auto sum = naiveBn(naiveConv(a, toD(blk.conv2.w), batch, cout, cout, 3, 1, 1, so, so), toD(blk.bn2.gamma),
                          toD(blk.bn2.beta), batch, cout, hw, blk.bn2.eps);
      std::vector<double> sc = xd;
      if (projection)
        sc = naiveBn(naiveConv(xd, toD(blk.scConv->w), batch, cin, cout, 1, stride, 0, side, side),
                     toD(blk.scBn->gamma), toD(blk.scBn->beta), batch, cout, hw, blk.scBn->eps);
      for (size_t i = 0; i < sum.size(); ++i) sum[i] += sc[i];
      CHECK(maxAbsDiff(y, relu(sum)) <= 10 * tol);
    }
  }
}
