// layers.h — the layers, as templates on the scalar type T (float for
// training, double for the finite-difference gradient checks: the same code).
// Instantiated for float and double in layers.cc.
//
// Conventions
//  - Tensors are dense NCHW (images) or [batch, features] (linear), row-major.
//  - forward(x, ...) keeps a pointer to x (and composite layers to their
//    output y): both must stay valid and unmodified until backward returns.
//  - backward(dy, ..., dx, ready) OVERWRITES the layer's param grads and dx
//    (dx == nullptr: the input gradient is not computed).  It calls
//    ready(firstParam + i) for its i-th param as soon as that grad is final,
//    in reverse param order; `ready` may be empty.
//  - Params are listed in forward order by addParams(), which also records
//    the layer's firstParam index.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "nn/model.h"

namespace coll::train::nn {

template <class T>
struct ParamT {
  std::string name;
  T* value;
  T* grad;  // nullptr for buffers
  size_t count;
};

using Ready = std::function<void(int)>;

// splitmix64: the init stream, identical on every platform.
class Rng {
 public:
  explicit Rng(uint64_t seed) : s_(seed) {}
  uint64_t next();
  double uniform();                        // [0, 1), 53 bits
  double uniform(double lo, double hi) { return lo + (hi - lo) * uniform(); }
  double normal();                         // Box-Muller

 private:
  uint64_t s_;
};

template <class T>
void fillUniform(std::vector<T>& v, Rng& rng, double bound);

// ---- Linear: y = x W^T + b, W [out, in], b [out]; params "<name>.weight", "<name>.bias".
template <class T>
class Linear {
 public:
  Linear(std::string name, int in, int out);
  void addParams(std::vector<ParamT<T>>& ps);
  void init(Rng& rng, double weightBound);  // W ~ U(+-weightBound), b ~ U(+-1/sqrt(in))
  void forward(const T* x, int batch, T* y);
  void backward(const T* dy, int batch, T* dx, const Ready& ready);

  std::string name;
  int in, out;
  std::vector<T> w, b, dw, db;
  int firstParam = 0;

 private:
  const T* x_ = nullptr;
  int batch_ = -1;  // -1: no forward yet
};

// ---- ReLU (applied in place by the models; the mask is taken from the output).
template <class T>
void reluForward(const T* x, size_t n, T* y);
// dx = dy * (y > 0); dx may alias dy.
template <class T>
void reluBackward(const T* y, const T* dy, size_t n, T* dx);

// ---- Conv2d, no bias (a BN follows every conv): W [cout, cin, k, k];
// im2col per image + gemm.  Param "<name>.weight".
template <class T>
class Conv2d {
 public:
  Conv2d(std::string name, int cin, int cout, int k, int stride, int pad, int hin, int win);
  void addParams(std::vector<ParamT<T>>& ps);
  void init(Rng& rng);  // He uniform: U(+-sqrt(6 / (cin*k*k)))
  void forward(const T* x, int batch, T* y);
  void backward(const T* dy, int batch, T* dx, const Ready& ready);
  size_t inSize() const { return size_t(cin) * hin * win; }    // per image
  size_t outSize() const { return size_t(cout) * hout * wout; }

  std::string name;
  int cin, cout, k, stride, pad, hin, win, hout, wout;
  std::vector<T> w, dw;
  int firstParam = 0;

 private:
  bool direct() const { return k == 1 && stride == 1 && pad == 0; }  // col == x
  void im2col(const T* x, T* col) const;
  void col2im(const T* col, T* dx) const;  // dx = sum of col entries (overwrites)

  const T* x_ = nullptr;
  int batch_ = -1;  // -1: no forward yet
  std::vector<T> col_;
};

// ---- BatchNorm2d over (N, H, W) per channel.  Train: batch statistics
// (optionally summed across ranks by BatchNormSync), running stats updated
// with momentum 0.1 (unbiased variance, as PyTorch); eval: running stats.
// Params "<name>.weight" (gamma), "<name>.bias" (beta); buffers
// "<name>.running_mean", "<name>.running_var".
template <class T>
class BatchNorm2d {
 public:
  BatchNorm2d(std::string name, int channels, int hw);
  void addParams(std::vector<ParamT<T>>& ps);
  void addBuffers(std::vector<ParamT<T>>& bs);
  void init();  // gamma 1, beta 0, running mean 0 / var 1
  void forward(const T* x, int batch, T* y, bool train, const BatchNormSync* sync);  // y != x
  void backward(const T* dy, int batch, T* dx, const Ready& ready);  // dx may alias dy

  std::string name;
  int c, hw;
  double momentum = 0.1, eps = 1e-5;
  std::vector<T> gamma, beta, dgamma, dbeta, runMean, runVar;
  int firstParam = 0;

 private:
  const T* x_ = nullptr;
  int batch_ = -1;  // -1: no forward yet
  bool train_ = false;
  const BatchNormSync* sync_ = nullptr;
  double count_ = 0;  // elements per channel over all ranks (train mode)
  std::vector<double> mean_, invstd_, red_;
};

// ---- Global average pooling: [batch, c, hw] -> [batch, c].
template <class T>
void gapForward(const T* x, int batch, int c, int hw, T* y);
template <class T>
void gapBackward(const T* dy, int batch, int c, int hw, T* dx);

// ---- Residual block: relu(bn2(conv2(relu(bn1(conv1(x))))) + shortcut(x)),
// shortcut = x, or bn(conv1x1/stride(x)) when the shape changes.
// Params in forward order: conv1, bn1, conv2, bn2, [shortcut.conv, shortcut.bn].
template <class T>
class ResidualBlock {
 public:
  ResidualBlock(std::string name, int cin, int cout, int stride, int hin, int win);
  void addParams(std::vector<ParamT<T>>& ps);
  void addBuffers(std::vector<ParamT<T>>& bs);
  void init(Rng& rng);
  void forward(const T* x, int batch, T* y, bool train, const BatchNormSync* sync);
  void backward(const T* dy, int batch, T* dx, const Ready& ready);
  bool projection() const { return scConv != nullptr; }
  size_t inSize() const { return conv1.inSize(); }
  size_t outSize() const { return conv2.outSize(); }

  std::string name;
  Conv2d<T> conv1;
  BatchNorm2d<T> bn1;
  Conv2d<T> conv2;
  BatchNorm2d<T> bn2;
  std::unique_ptr<Conv2d<T>> scConv;
  std::unique_ptr<BatchNorm2d<T>> scBn;

 private:
  const T* y_ = nullptr;
  int batch_ = -1;  // -1: no forward yet
  std::vector<T> c1_, a1_, c2_, sc_, g_, t1_, t2_, dsc_;
};

// ---- Softmax cross-entropy: loss = sum_i CE_i / divisor; dlogits (may be
// null) = d loss / d logits.  Accumulates in double.
template <class T>
double softmaxCE(const T* logits, const int* labels, int batch, int classes, double divisor, T* dlogits);

}  // namespace coll::train::nn
