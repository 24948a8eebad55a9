// layers.cc — see layers.h.  Every loop has a fixed order (no threads), so
// results are bit-identical run to run.
#include "nn/layers.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <stdexcept>
#include <utility>

#include "nn/gemm.h"

namespace coll::train::nn {

// ---------------------------------------------------------------- Rng
uint64_t Rng::next() {
  uint64_t z = (s_ += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

double Rng::uniform() { return double(next() >> 11) * 0x1.0p-53; }

double Rng::normal() {
  const double u1 = 1.0 - uniform();  // (0, 1]
  const double u2 = uniform();
  return std::sqrt(-2.0 * std::log(u1)) * std::cos(6.283185307179586 * u2);
}

template <class T>
void fillUniform(std::vector<T>& v, Rng& rng, double bound) {
  for (auto& x : v) x = T(rng.uniform(-bound, bound));
}

namespace {

inline void notify(const Ready& ready, int index) {
  if (ready) ready(index);
}

// Sum and sum of squares of n values in double, in 8 fixed lanes (the
// compiler vectorizes the lanes; the order is the same every run).
template <class T>
inline void sumAndSquares(const T* __restrict x, size_t n, double& s, double& q) {
  constexpr int L = 8;
  double sl[L] = {}, ql[L] = {};
  size_t i = 0;
  for (; i + L <= n; i += L) {
    for (int l = 0; l < L; ++l) {
      const double a = double(x[i + l]);
      sl[l] += a;
      ql[l] += a * a;
    }
  }
  for (; i < n; ++i) {
    const double a = double(x[i]);
    sl[0] += a;
    ql[0] += a * a;
  }
  double ss = 0, qq = 0;
  for (int l = 0; l < L; ++l) {
    ss += sl[l];
    qq += ql[l];
  }
  s += ss;
  q += qq;
}

// sum(dy) and sum(dy * (x - mean) * invstd) in double, 8 fixed lanes.
template <class T>
inline void sumDyAndDyXhat(const T* __restrict x, const T* __restrict dy, size_t n, T mean, T invstd,
                           double& s, double& p) {
  constexpr int L = 8;
  double sl[L] = {}, pl[L] = {};
  size_t i = 0;
  for (; i + L <= n; i += L) {
    for (int l = 0; l < L; ++l) {
      const T xh = (x[i + l] - mean) * invstd;
      sl[l] += double(dy[i + l]);
      pl[l] += double(dy[i + l] * xh);
    }
  }
  for (; i < n; ++i) {
    const T xh = (x[i] - mean) * invstd;
    sl[0] += double(dy[i]);
    pl[0] += double(dy[i] * xh);
  }
  double ss = 0, pp = 0;
  for (int l = 0; l < L; ++l) {
    ss += sl[l];
    pp += pl[l];
  }
  s += ss;
  p += pp;
}

}  // namespace

// ---------------------------------------------------------------- Linear
template <class T>
Linear<T>::Linear(std::string n, int inF, int outF)
    : name(std::move(n)), in(inF), out(outF), w(size_t(inF) * outF), b(outF), dw(w.size()), db(outF) {}

template <class T>
void Linear<T>::addParams(std::vector<ParamT<T>>& ps) {
  firstParam = int(ps.size());
  ps.push_back({name + ".weight", w.data(), dw.data(), w.size()});
  ps.push_back({name + ".bias", b.data(), db.data(), b.size()});
}

template <class T>
void Linear<T>::init(Rng& rng, double weightBound) {
  fillUniform(w, rng, weightBound);
  fillUniform(b, rng, 1.0 / std::sqrt(double(in)));
}

template <class T>
void Linear<T>::forward(const T* x, int batch, T* y) {
  x_ = x;
  batch_ = batch;
  for (int n = 0; n < batch; ++n) std::copy(b.begin(), b.end(), y + size_t(n) * out);
  gemm<T>(Trans::No, Trans::Yes, batch, out, in, T(1), x, in, w.data(), in, T(1), y, out);
}

template <class T>
void Linear<T>::backward(const T* dy, int batch, T* dx, const Ready& ready) {
  if (batch != batch_) throw std::logic_error(name + ": backward without a matching forward");
  for (int o = 0; o < out; ++o) {
    double s = 0;
    for (int n = 0; n < batch; ++n) s += dy[size_t(n) * out + o];
    db[o] = T(s);
  }
  notify(ready, firstParam + 1);
  gemm<T>(Trans::Yes, Trans::No, out, in, batch, T(1), dy, out, x_, in, T(0), dw.data(), in);
  notify(ready, firstParam);
  if (dx) gemm<T>(Trans::No, Trans::No, batch, in, out, T(1), dy, out, w.data(), in, T(0), dx, in);
}

// ---------------------------------------------------------------- ReLU
template <class T>
void reluForward(const T* x, size_t n, T* y) {
  for (size_t i = 0; i < n; ++i) y[i] = std::max(x[i], T(0));
}

template <class T>
void reluBackward(const T* y, const T* dy, size_t n, T* dx) {
  for (size_t i = 0; i < n; ++i) dx[i] = y[i] > T(0) ? dy[i] : T(0);
}

// ---------------------------------------------------------------- Conv2d
template <class T>
Conv2d<T>::Conv2d(std::string n, int ci, int co, int kk, int s, int p, int hi, int wi)
    : name(std::move(n)), cin(ci), cout(co), k(kk), stride(s), pad(p), hin(hi), win(wi),
      hout((hi + 2 * p - kk) / s + 1), wout((wi + 2 * p - kk) / s + 1),
      w(size_t(co) * ci * kk * kk), dw(w.size()) {
  if (ci <= 0 || co <= 0 || kk <= 0 || s <= 0 || p < 0 || hout <= 0 || wout <= 0)
    throw std::invalid_argument(name + ": bad conv shape");
  if (!direct()) col_.resize(size_t(cin) * k * k * hout * wout);
}

template <class T>
void Conv2d<T>::addParams(std::vector<ParamT<T>>& ps) {
  firstParam = int(ps.size());
  ps.push_back({name + ".weight", w.data(), dw.data(), w.size()});
}

template <class T>
void Conv2d<T>::init(Rng& rng) {
  fillUniform(w, rng, std::sqrt(6.0 / double(cin * k * k)));
}

// Output columns ox whose input column ox*stride - pad + kj lies in [0, win).
namespace {
inline void validRange(int kj, int stride, int pad, int win, int wout, int& lo, int& hi) {
  const int a = pad - kj;  // need ox*stride >= a
  lo = a <= 0 ? 0 : (a + stride - 1) / stride;
  const int b = win - 1 + pad - kj;  // need ox*stride <= b
  hi = b < 0 ? 0 : std::min(wout, b / stride + 1);
  lo = std::min(lo, hi);
}
}  // namespace

template <class T>
void Conv2d<T>::im2col(const T* x, T* col) const {
  const size_t hwo = size_t(hout) * wout;
  if (stride == 1 && hout == hin && wout == win) {
    // "Same" convolution: each row is the input plane shifted by
    // (ki - pad) rows and (kj - pad) columns: one contiguous copy, then the
    // columns that wrapped around and the rows outside are zeroed.
    for (int c = 0; c < cin; ++c) {
      const T* plane = x + size_t(c) * hin * win;
      for (int ki = 0; ki < k; ++ki) {
        const int oy0 = std::max(0, pad - ki), oy1 = std::min(hout, hin + pad - ki);
        for (int kj = 0; kj < k; ++kj) {
          T* row = col + (size_t(c * k + ki) * k + kj) * hwo;
          int lo, hi;
          validRange(kj, stride, pad, win, wout, lo, hi);
          if (oy0 >= oy1 || lo >= hi) {
            std::fill_n(row, hwo, T(0));
            continue;
          }
          const ptrdiff_t shift = ptrdiff_t(ki - pad) * win + (kj - pad);
          std::fill(row, row + size_t(oy0) * wout, T(0));
          const size_t d0 = size_t(oy0) * wout + lo, d1 = size_t(oy1 - 1) * wout + hi;
          std::copy(plane + ptrdiff_t(d0) + shift, plane + ptrdiff_t(d1) + shift, row + d0);
          for (int oy = oy0; oy < oy1; ++oy) {
            T* r = row + size_t(oy) * wout;
            for (int ox = 0; ox < lo; ++ox) r[ox] = T(0);
            for (int ox = hi; ox < wout; ++ox) r[ox] = T(0);
          }
          std::fill(row + size_t(oy1) * wout, row + hwo, T(0));
        }
      }
    }
    return;
  }
  for (int c = 0; c < cin; ++c) {
    for (int ki = 0; ki < k; ++ki) {
      for (int kj = 0; kj < k; ++kj) {
        T* row = col + (size_t(c * k + ki) * k + kj) * hwo;
        int lo, hi;
        validRange(kj, stride, pad, win, wout, lo, hi);
        for (int oy = 0; oy < hout; ++oy) {
          T* r = row + size_t(oy) * wout;
          const int iy = oy * stride - pad + ki;
          if (iy < 0 || iy >= hin) {
            for (int ox = 0; ox < wout; ++ox) r[ox] = T(0);
            continue;
          }
          const T* src = x + (size_t(c) * hin + iy) * win - pad + kj;
          for (int ox = 0; ox < lo; ++ox) r[ox] = T(0);
          if (stride == 1) {
            for (int ox = lo; ox < hi; ++ox) r[ox] = src[ox];
          } else {
            for (int ox = lo; ox < hi; ++ox) r[ox] = src[ox * stride];
          }
          for (int ox = hi; ox < wout; ++ox) r[ox] = T(0);
        }
      }
    }
  }
}

template <class T>
void Conv2d<T>::col2im(const T* col, T* dx) const {
  const size_t hwo = size_t(hout) * wout;
  std::fill_n(dx, inSize(), T(0));
  for (int c = 0; c < cin; ++c) {
    for (int ki = 0; ki < k; ++ki) {
      for (int kj = 0; kj < k; ++kj) {
        const T* row = col + (size_t(c * k + ki) * k + kj) * hwo;
        int lo, hi;
        validRange(kj, stride, pad, win, wout, lo, hi);
        for (int oy = 0; oy < hout; ++oy) {
          const int iy = oy * stride - pad + ki;
          if (iy < 0 || iy >= hin) continue;
          const T* r = row + size_t(oy) * wout;
          T* dst = dx + (size_t(c) * hin + iy) * win - pad + kj;
          if (stride == 1) {
            for (int ox = lo; ox < hi; ++ox) dst[ox] += r[ox];
          } else {
            for (int ox = lo; ox < hi; ++ox) dst[ox * stride] += r[ox];
          }
        }
      }
    }
  }
}

template <class T>
void Conv2d<T>::forward(const T* x, int batch, T* y) {
  x_ = x;
  batch_ = batch;
  const int ckk = cin * k * k, hwo = hout * wout;
  for (int n = 0; n < batch; ++n) {
    const T* xn = x + size_t(n) * inSize();
    const T* col = xn;
    if (!direct()) {
      im2col(xn, col_.data());
      col = col_.data();
    }
    gemm<T>(Trans::No, Trans::No, cout, hwo, ckk, T(1), w.data(), ckk, col, hwo, T(0),
            y + size_t(n) * outSize(), hwo);
  }
}

template <class T>
void Conv2d<T>::backward(const T* dy, int batch, T* dx, const Ready& ready) {
  if (batch != batch_) throw std::logic_error(name + ": backward without a matching forward");
  const int ckk = cin * k * k, hwo = hout * wout;
  // dW = sum_n dY_n col_n^T, images in order.
  for (int n = 0; n < batch; ++n) {
    const T* xn = x_ + size_t(n) * inSize();
    const T* col = xn;
    if (!direct()) {
      im2col(xn, col_.data());
      col = col_.data();
    }
    gemm<T>(Trans::No, Trans::Yes, cout, ckk, hwo, T(1), dy + size_t(n) * outSize(), hwo, col, hwo,
            n == 0 ? T(0) : T(1), dw.data(), ckk);
  }
  if (batch == 0) std::fill(dw.begin(), dw.end(), T(0));
  notify(ready, firstParam);
  if (!dx) return;
  // dX_n = col2im(W^T dY_n).
  for (int n = 0; n < batch; ++n) {
    T* dxn = dx + size_t(n) * inSize();
    const T* dyn = dy + size_t(n) * outSize();
    if (direct()) {
      gemm<T>(Trans::Yes, Trans::No, ckk, hwo, cout, T(1), w.data(), ckk, dyn, hwo, T(0), dxn, hwo);
    } else {
      gemm<T>(Trans::Yes, Trans::No, ckk, hwo, cout, T(1), w.data(), ckk, dyn, hwo, T(0), col_.data(), hwo);
      col2im(col_.data(), dxn);
    }
  }
}

// ---------------------------------------------------------------- BatchNorm2d
template <class T>
BatchNorm2d<T>::BatchNorm2d(std::string n, int ch, int hwIn)
    : name(std::move(n)), c(ch), hw(hwIn), gamma(ch), beta(ch), dgamma(ch), dbeta(ch), runMean(ch),
      runVar(ch), mean_(ch), invstd_(ch), red_(2 * size_t(ch) + 1) {
  if (ch <= 0 || hwIn <= 0) throw std::invalid_argument(name + ": bad batchnorm shape");
  init();
}

template <class T>
void BatchNorm2d<T>::addParams(std::vector<ParamT<T>>& ps) {
  firstParam = int(ps.size());
  ps.push_back({name + ".weight", gamma.data(), dgamma.data(), gamma.size()});
  ps.push_back({name + ".bias", beta.data(), dbeta.data(), beta.size()});
}

template <class T>
void BatchNorm2d<T>::addBuffers(std::vector<ParamT<T>>& bs) {
  bs.push_back({name + ".running_mean", runMean.data(), nullptr, runMean.size()});
  bs.push_back({name + ".running_var", runVar.data(), nullptr, runVar.size()});
}

template <class T>
void BatchNorm2d<T>::init() {
  std::fill(gamma.begin(), gamma.end(), T(1));
  std::fill(beta.begin(), beta.end(), T(0));
  std::fill(runMean.begin(), runMean.end(), T(0));
  std::fill(runVar.begin(), runVar.end(), T(1));
}

template <class T>
void BatchNorm2d<T>::forward(const T* x, int batch, T* y, bool train, const BatchNormSync* sync) {
  x_ = x;
  batch_ = batch;
  train_ = train;
  sync_ = (train && sync && sync->allReduceSum) ? sync : nullptr;
  if (train) {
    std::fill(red_.begin(), red_.end(), 0.0);
    for (int ch = 0; ch < c; ++ch) {
      double s = 0, q = 0;
      for (int n = 0; n < batch; ++n) sumAndSquares(x + (size_t(n) * c + ch) * hw, size_t(hw), s, q);
      red_[ch] = s;
      red_[c + ch] = q;
    }
    red_[2 * size_t(c)] = double(batch) * hw;
    if (sync_) sync_->allReduceSum(red_.data(), red_.size());
    const double cnt = red_[2 * size_t(c)];
    count_ = cnt;
    // cnt == 0 (an empty batch on every rank): nothing to normalize, the
    // running statistics stay.
    for (int ch = 0; ch < c && cnt > 0; ++ch) {
      const double mean = red_[ch] / cnt;
      const double var = std::max(0.0, red_[c + ch] / cnt - mean * mean);
      mean_[ch] = mean;
      invstd_[ch] = 1.0 / std::sqrt(var + eps);
      const double unbiased = cnt > 1 ? var * cnt / (cnt - 1) : var;
      runMean[ch] = T((1 - momentum) * double(runMean[ch]) + momentum * mean);
      runVar[ch] = T((1 - momentum) * double(runVar[ch]) + momentum * unbiased);
    }
  } else {
    for (int ch = 0; ch < c; ++ch) {
      mean_[ch] = double(runMean[ch]);
      invstd_[ch] = 1.0 / std::sqrt(double(runVar[ch]) + eps);
    }
  }
  for (int ch = 0; ch < c; ++ch) {
    const double scaleD = double(gamma[ch]) * invstd_[ch];
    const T scale = T(scaleD), shift = T(double(beta[ch]) - mean_[ch] * scaleD);
    for (int n = 0; n < batch; ++n) {
      const size_t off = (size_t(n) * c + ch) * hw;
      const T* xp = x + off;
      T* yp = y + off;
      for (int i = 0; i < hw; ++i) yp[i] = xp[i] * scale + shift;
    }
  }
}

template <class T>
void BatchNorm2d<T>::backward(const T* dy, int batch, T* dx, const Ready& ready) {
  if (batch != batch_) throw std::logic_error(name + ": backward without a matching forward");
  // Per channel: sum(dy) and sum(dy * xhat), xhat = (x - mean) * invstd.
  for (int ch = 0; ch < c; ++ch) {
    const T mean = T(mean_[ch]), invstd = T(invstd_[ch]);
    double s = 0, p = 0;
    for (int n = 0; n < batch; ++n) {
      const size_t off = (size_t(n) * c + ch) * hw;
      sumDyAndDyXhat(x_ + off, dy + off, size_t(hw), mean, invstd, s, p);
    }
    red_[ch] = s;
    red_[c + ch] = p;
    dbeta[ch] = T(s);
    dgamma[ch] = T(p);
  }
  notify(ready, firstParam + 1);
  notify(ready, firstParam);
  if (!train_) {
    if (!dx) return;
    for (int ch = 0; ch < c; ++ch) {
      const T k = T(double(gamma[ch]) * invstd_[ch]);
      for (int n = 0; n < batch; ++n) {
        const size_t off = (size_t(n) * c + ch) * hw;
        for (int i = 0; i < hw; ++i) dx[off + i] = dy[off + i] * k;
      }
    }
    return;
  }
  // Train mode: the batch statistics depend on every input of every rank, so
  // the input gradient needs the global sums (ranks add them through the sync).
  if (sync_) sync_->allReduceSum(red_.data(), 2 * size_t(c));
  if (!dx) return;
  for (int ch = 0; ch < c; ++ch) {
    const double k = double(gamma[ch]) * invstd_[ch];
    const T kT = T(k), a = T(red_[ch] / count_), b = T(red_[c + ch] / count_);
    const T mean = T(mean_[ch]), invstd = T(invstd_[ch]);
    for (int n = 0; n < batch; ++n) {
      const size_t off = (size_t(n) * c + ch) * hw;
      const T* xp = x_ + off;
      const T* dp = dy + off;
      T* dxp = dx + off;
      for (int i = 0; i < hw; ++i) {
        const T xh = (xp[i] - mean) * invstd;
        dxp[i] = kT * (dp[i] - a - xh * b);
      }
    }
  }
}

// ---------------------------------------------------------------- global average pool
template <class T>
void gapForward(const T* x, int batch, int c, int hw, T* y) {
  for (size_t p = 0; p < size_t(batch) * c; ++p) {
    double s = 0;
    const T* xp = x + p * hw;
    for (int i = 0; i < hw; ++i) s += double(xp[i]);
    y[p] = T(s / hw);
  }
}

template <class T>
void gapBackward(const T* dy, int batch, int c, int hw, T* dx) {
  for (size_t p = 0; p < size_t(batch) * c; ++p) {
    const T g = T(double(dy[p]) / hw);
    std::fill_n(dx + p * hw, hw, g);
  }
}

// ---------------------------------------------------------------- ResidualBlock
template <class T>
ResidualBlock<T>::ResidualBlock(std::string n, int cin, int cout, int stride, int hin, int win)
    : name(std::move(n)),
      conv1(name + ".conv1", cin, cout, 3, stride, 1, hin, win),
      bn1(name + ".bn1", cout, conv1.hout * conv1.wout),
      conv2(name + ".conv2", cout, cout, 3, 1, 1, conv1.hout, conv1.wout),
      bn2(name + ".bn2", cout, conv2.hout * conv2.wout) {
  if (stride != 1 || cin != cout) {
    scConv = std::make_unique<Conv2d<T>>(name + ".shortcut.conv", cin, cout, 1, stride, 0, hin, win);
    scBn = std::make_unique<BatchNorm2d<T>>(name + ".shortcut.bn", cout, scConv->hout * scConv->wout);
    if (scConv->hout != conv2.hout || scConv->wout != conv2.wout)
      throw std::invalid_argument(name + ": shortcut shape mismatch");
  }
}

template <class T>
void ResidualBlock<T>::addParams(std::vector<ParamT<T>>& ps) {
  conv1.addParams(ps);
  bn1.addParams(ps);
  conv2.addParams(ps);
  bn2.addParams(ps);
  if (scConv) {
    scConv->addParams(ps);
    scBn->addParams(ps);
  }
}

template <class T>
void ResidualBlock<T>::addBuffers(std::vector<ParamT<T>>& bs) {
  bn1.addBuffers(bs);
  bn2.addBuffers(bs);
  if (scBn) scBn->addBuffers(bs);
}

template <class T>
void ResidualBlock<T>::init(Rng& rng) {
  conv1.init(rng);
  bn1.init();
  conv2.init(rng);
  bn2.init();
  if (scConv) {
    scConv->init(rng);
    scBn->init();
  }
}

template <class T>
void ResidualBlock<T>::forward(const T* x, int batch, T* y, bool train, const BatchNormSync* sync) {
  y_ = y;
  batch_ = batch;
  const size_t nOut = size_t(batch) * outSize();
  c1_.resize(nOut);
  a1_.resize(nOut);
  c2_.resize(nOut);
  conv1.forward(x, batch, c1_.data());
  bn1.forward(c1_.data(), batch, a1_.data(), train, sync);
  reluForward(a1_.data(), nOut, a1_.data());
  conv2.forward(a1_.data(), batch, c2_.data());
  bn2.forward(c2_.data(), batch, y, train, sync);
  if (scConv) {
    sc_.resize(nOut);
    t1_.resize(nOut);
    scConv->forward(x, batch, sc_.data());
    scBn->forward(sc_.data(), batch, t1_.data(), train, sync);
    for (size_t i = 0; i < nOut; ++i) y[i] += t1_[i];
  } else {
    for (size_t i = 0; i < nOut; ++i) y[i] += x[i];
  }
  reluForward(y, nOut, y);
}

template <class T>
void ResidualBlock<T>::backward(const T* dy, int batch, T* dx, const Ready& ready) {
  if (batch != batch_) throw std::logic_error(name + ": backward without a matching forward");
  const size_t nOut = size_t(batch) * outSize(), nIn = size_t(batch) * inSize();
  g_.resize(nOut);
  t1_.resize(nOut);
  t2_.resize(nOut);
  reluBackward(y_, dy, nOut, g_.data());  // g = d(pre-relu sum)
  // The shortcut's params come last in forward order, so their grads first.
  if (scConv) {
    scBn->backward(g_.data(), batch, t1_.data(), ready);
    dsc_.resize(dx ? nIn : 0);
    scConv->backward(t1_.data(), batch, dx ? dsc_.data() : nullptr, ready);
  }
  bn2.backward(g_.data(), batch, t1_.data(), ready);           // t1 = d c2
  conv2.backward(t1_.data(), batch, t2_.data(), ready);        // t2 = d a1 (post-relu)
  reluBackward(a1_.data(), t2_.data(), nOut, t2_.data());      // t2 = d bn1 out
  bn1.backward(t2_.data(), batch, t1_.data(), ready);          // t1 = d c1
  conv1.backward(t1_.data(), batch, dx, ready);
  if (dx) {
    const T* s = scConv ? dsc_.data() : g_.data();
    for (size_t i = 0; i < nIn; ++i) dx[i] += s[i];
  }
}

// ---------------------------------------------------------------- softmax cross-entropy
template <class T>
double softmaxCE(const T* logits, const int* labels, int batch, int classes, double divisor, T* dlogits) {
  if (batch < 0 || classes <= 0) throw std::invalid_argument("softmaxCE: bad shape");
  if (!(divisor > 0)) throw std::invalid_argument("softmaxCE: divisor must be > 0");
  double loss = 0;
  for (int n = 0; n < batch; ++n) {
    const int label = labels[n];
    if (label < 0 || label >= classes) throw std::invalid_argument("softmaxCE: label out of range");
    const T* row = logits + size_t(n) * classes;
    double m = double(row[0]);
    for (int j = 1; j < classes; ++j) m = std::max(m, double(row[j]));
    double se = 0;
    for (int j = 0; j < classes; ++j) se += std::exp(double(row[j]) - m);
    loss += m + std::log(se) - double(row[label]);
    if (dlogits) {
      T* d = dlogits + size_t(n) * classes;
      for (int j = 0; j < classes; ++j) {
        const double p = std::exp(double(row[j]) - m) / se;
        d[j] = T((p - (j == label ? 1.0 : 0.0)) / divisor);
      }
    }
  }
  return loss / divisor;
}

// ---------------------------------------------------------------- instantiations
#define COLL_NN_INSTANTIATE(T)                                                               \
  template void fillUniform<T>(std::vector<T>&, Rng&, double);                               \
  template class Linear<T>;                                                                  \
  template void reluForward<T>(const T*, size_t, T*);                                        \
  template void reluBackward<T>(const T*, const T*, size_t, T*);                             \
  template class Conv2d<T>;                                                                  \
  template class BatchNorm2d<T>;                                                             \
  template void gapForward<T>(const T*, int, int, int, T*);                                  \
  template void gapBackward<T>(const T*, int, int, int, T*);                                 \
  template class ResidualBlock<T>;                                                           \
  template double softmaxCE<T>(const T*, const int*, int, int, double, T*);

COLL_NN_INSTANTIATE(float)
COLL_NN_INSTANTIATE(double)

}  // namespace coll::train::nn
