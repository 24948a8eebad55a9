// grad_check.h — central finite differences against analytic gradients, in
// float64.  Relative error per element: |a - n| / max(|a|, |n|, kFloor); a
// check passes when the largest is <= kMaxRel.
//
// Why a floor: with h = 1e-5 the numeric derivative of an O(1) loss carries
// rounding noise of about ulp(loss) / 2h ~ 1e-11..1e-10 (several ulps through
// a ResNet), so a gradient of 1e-5 cannot be measured to 1e-6 relative.
// Gradients under kFloor are compared absolutely: |a - n| <= 1e-6 * 1e-3 =
// 1e-9, still ~1e-4 relative for the smallest ones checked (input grads of
// ~1e-5), far below any real mistake (those are O(gradient)).
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <numeric>
#include <string>
#include <vector>

#include "nn/layers.h"

namespace gradcheck {

using coll::train::nn::Rng;

inline constexpr double kStep = 1e-5;    // central-difference step h
inline constexpr double kMaxRel = 1e-6;  // largest relative error allowed
inline constexpr double kFloor = 1e-3;

struct Result {
  double maxRel = 0;
  size_t worst = 0;
  double worstAnalytic = 0, worstNumeric = 0;
  size_t checked = 0;
  std::string describe(const std::string& what) const {
    return what + ": " + std::to_string(checked) + " elements, max rel err " + std::to_string(maxRel) +
           " at [" + std::to_string(worst) + "] analytic " + std::to_string(worstAnalytic) + " numeric " +
           std::to_string(worstNumeric);
  }
};

inline double relErr(double a, double n) {
  return std::abs(a - n) / std::max({std::abs(a), std::abs(n), kFloor});
}

// For every index i: numeric d loss / d v[i] by central differences
// (v[i] restored bit-exactly afterwards), compared with analytic[i].
template <class F>
Result check(double* v, const std::vector<double>& analytic, const std::vector<size_t>& idx, F&& loss,
             double h = kStep) {
  Result r;
  for (size_t i : idx) {
    const double orig = v[i];
    v[i] = orig + h;
    const double lp = loss();
    v[i] = orig - h;
    const double lm = loss();
    v[i] = orig;
    const double num = (lp - lm) / (2 * h);
    const double e = relErr(analytic[i], num);
    if (e >= r.maxRel) {
      r.maxRel = e;
      r.worst = i;
      r.worstAnalytic = analytic[i];
      r.worstNumeric = num;
    }
    ++r.checked;
  }
  return r;
}

inline std::vector<size_t> all(size_t n) {
  std::vector<size_t> v(n);
  std::iota(v.begin(), v.end(), size_t(0));
  return v;
}

// k distinct indices in [0, n) (all of them when n <= k), sorted.
inline std::vector<size_t> sample(size_t n, size_t k, Rng& rng) {
  if (n <= k) return all(n);
  std::vector<size_t> v = all(n);
  for (size_t i = 0; i < k; ++i) std::swap(v[i], v[i + rng.next() % (n - i)]);
  v.resize(k);
  std::sort(v.begin(), v.end());
  return v;
}

inline std::vector<double> randn(size_t n, Rng& rng, double scale = 1.0, double shift = 0.0) {
  std::vector<double> v(n);
  for (auto& x : v) x = shift + scale * rng.normal();
  return v;
}

inline double dot(const std::vector<double>& a, const double* b) {
  double s = 0;
  for (size_t i = 0; i < a.size(); ++i) s += a[i] * b[i];
  return s;
}

}  // namespace gradcheck
