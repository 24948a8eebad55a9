// net.h — the models as templates on the scalar type (internal): Net<float>
// is what makeModel() wraps, Net<double> is what the gradient checks run.
#pragma once

#include <functional>
#include <memory>
#include <vector>

#include "nn/layers.h"
#include "nn/model.h"

namespace coll::train::nn {

template <class T>
class Net {
 public:
  virtual ~Net() = default;
  virtual const char* name() const = 0;
  // Same contracts as coll::train::Model (x is copied).
  virtual void forward(const T* x, int batch, T* logits, bool train, const BatchNormSync* sync) = 0;
  virtual void backward(const T* dlogits, int batch, const std::function<void(int)>& onGradReady) = 0;
  const std::vector<ParamT<T>>& params() const { return params_; }
  const std::vector<ParamT<T>>& buffers() const { return buffers_; }

  // When set, backward also computes d loss / d x ([batch, 784]) into inputGrad().
  bool computeInputGrad = false;
  const std::vector<T>& inputGrad() const { return dx_; }

 protected:
  void checkBackward(int batch) const;
  std::vector<ParamT<T>> params_, buffers_;
  std::vector<T> x_, dx_;
  int batch_ = -1;  // -1: no forward yet
};

// MLP: 784 -> hidden... -> 10, ReLU between; params fc1.weight, fc1.bias, ...
template <class T>
class Mlp final : public Net<T> {
 public:
  Mlp(const std::vector<int>& hidden, uint64_t seed);
  const char* name() const override { return "mlp"; }
  void forward(const T* x, int batch, T* logits, bool train, const BatchNormSync* sync) override;
  void backward(const T* dlogits, int batch, const std::function<void(int)>& onGradReady) override;

  std::vector<std::unique_ptr<Linear<T>>> layers;

 private:
  std::vector<std::vector<T>> act_;   // act_[i]: output of layer i (post-ReLU; logits for the last)
  std::vector<std::vector<T>> grad_;  // grad_[i]: d loss / d input of layer i+1
};

// ResNet for 28x28x1: stem conv3x3(1->w)+BN+ReLU, `blocks` residual blocks
// (blocks 2 and 3: stride 2, channels x2), global average pool, linear to 10.
template <class T>
class ResNet final : public Net<T> {
 public:
  ResNet(int width, int blocks, uint64_t seed);
  const char* name() const override { return "resnet"; }
  void forward(const T* x, int batch, T* logits, bool train, const BatchNormSync* sync) override;
  void backward(const T* dlogits, int batch, const std::function<void(int)>& onGradReady) override;

  std::unique_ptr<Conv2d<T>> stemConv;
  std::unique_ptr<BatchNorm2d<T>> stemBn;
  std::vector<std::unique_ptr<ResidualBlock<T>>> blocks;
  std::unique_ptr<Linear<T>> fc;

 private:
  std::vector<T> stemC_, stemA_, pooled_, logits_, gStem_, gPooled_;
  std::vector<std::vector<T>> out_, gOut_;  // per block: output, d output
};

// std::invalid_argument on a bad config.
template <class T>
std::unique_ptr<Net<T>> makeNet(const ModelConfig& cfg);

}  // namespace coll::train::nn
