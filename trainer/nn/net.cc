// net.cc — the MLP and the ResNet (see net.h).
#include "nn/net.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>

#include "nn/gemm.h"

namespace coll::train::nn {

template <class T>
void Net<T>::checkBackward(int batch) const {
  if (batch_ < 0) throw std::logic_error(std::string(name()) + ": backward before forward");
  if (batch != batch_)
    throw std::logic_error(std::string(name()) + ": backward batch " + std::to_string(batch) +
                           " != forward batch " + std::to_string(batch_));
}

namespace {
// batch 0 is allowed: a data-parallel rank whose share of the last batch is
// empty still runs forward/backward (zero grads) and joins every BN sync.
void checkBatch(int batch) {
  if (batch < 0) throw std::invalid_argument("forward: batch must be >= 0");
}
}  // namespace

// ---------------------------------------------------------------- MLP
template <class T>
Mlp<T>::Mlp(const std::vector<int>& hidden, uint64_t seed) {
  std::vector<int> dims{kImagePixels};
  for (int h : hidden) {
    if (h <= 0) throw std::invalid_argument("mlp: hidden sizes must be > 0");
    dims.push_back(h);
  }
  dims.push_back(kNumClasses);
  Rng rng(seed);
  for (size_t i = 0; i + 1 < dims.size(); ++i) {
    layers.push_back(std::make_unique<Linear<T>>("fc" + std::to_string(i + 1), dims[i], dims[i + 1]));
    const bool last = i + 2 == dims.size();
    // He init before a ReLU, 1/sqrt(fan_in) for the logits.
    layers.back()->init(rng, last ? 1.0 / std::sqrt(double(dims[i])) : std::sqrt(6.0 / dims[i]));
    layers.back()->addParams(this->params_);
  }
  act_.resize(layers.size());
  grad_.resize(layers.size());
}

template <class T>
void Mlp<T>::forward(const T* x, int batch, T* logits, bool, const BatchNormSync*) {
  checkBatch(batch);
  this->x_.assign(x, x + size_t(batch) * kImagePixels);
  this->batch_ = batch;
  const T* in = this->x_.data();
  for (size_t i = 0; i < layers.size(); ++i) {
    const size_t n = size_t(batch) * layers[i]->out;
    act_[i].resize(n);
    layers[i]->forward(in, batch, act_[i].data());
    if (i + 1 < layers.size()) reluForward(act_[i].data(), n, act_[i].data());
    in = act_[i].data();
  }
  std::copy(act_.back().begin(), act_.back().end(), logits);
}

template <class T>
void Mlp<T>::backward(const T* dlogits, int batch, const std::function<void(int)>& onGradReady) {
  this->checkBackward(batch);
  const T* g = dlogits;
  for (size_t i = layers.size(); i-- > 0;) {
    T* dx = nullptr;
    if (i > 0) {
      grad_[i - 1].resize(size_t(batch) * layers[i]->in);
      dx = grad_[i - 1].data();
    } else if (this->computeInputGrad) {
      this->dx_.resize(size_t(batch) * kImagePixels);
      dx = this->dx_.data();
    }
    layers[i]->backward(g, batch, dx, onGradReady);
    if (i > 0) {
      reluBackward(act_[i - 1].data(), dx, grad_[i - 1].size(), dx);
      g = dx;
    }
  }
}

// ---------------------------------------------------------------- ResNet
template <class T>
ResNet<T>::ResNet(int width, int nblocks, uint64_t seed) {
  if (width <= 0 || nblocks <= 0) throw std::invalid_argument("resnet: width and blocks must be > 0");
  if (width > 4096 || nblocks > 64) throw std::invalid_argument("resnet: width or blocks too large");
  Rng rng(seed);
  stemConv = std::make_unique<Conv2d<T>>("stem.conv", 1, width, 3, 1, 1, kImageSide, kImageSide);
  stemBn = std::make_unique<BatchNorm2d<T>>("stem.bn", width, kImagePixels);
  stemConv->init(rng);
  stemConv->addParams(this->params_);
  stemBn->addParams(this->params_);
  stemBn->addBuffers(this->buffers_);
  int c = width, side = kImageSide;
  for (int b = 1; b <= nblocks; ++b) {
    const int stride = (b == 2 || b == 3) ? 2 : 1;
    const int cout = stride == 2 ? 2 * c : c;
    blocks.push_back(std::make_unique<ResidualBlock<T>>("block" + std::to_string(b), c, cout, stride, side, side));
    auto& blk = *blocks.back();
    blk.init(rng);
    blk.addParams(this->params_);
    blk.addBuffers(this->buffers_);
    c = cout;
    side = blk.conv1.hout;
  }
  fc = std::make_unique<Linear<T>>("fc", c, kNumClasses);
  fc->init(rng, 1.0 / std::sqrt(double(c)));
  fc->addParams(this->params_);
  out_.resize(blocks.size());
  gOut_.resize(blocks.size());
}

template <class T>
void ResNet<T>::forward(const T* x, int batch, T* logits, bool train, const BatchNormSync* sync) {
  checkBatch(batch);
  this->x_.assign(x, x + size_t(batch) * kImagePixels);
  this->batch_ = batch;
  const size_t nStem = size_t(batch) * stemConv->outSize();
  stemC_.resize(nStem);
  stemA_.resize(nStem);
  stemConv->forward(this->x_.data(), batch, stemC_.data());
  stemBn->forward(stemC_.data(), batch, stemA_.data(), train, sync);
  reluForward(stemA_.data(), nStem, stemA_.data());
  const T* in = stemA_.data();
  for (size_t b = 0; b < blocks.size(); ++b) {
    out_[b].resize(size_t(batch) * blocks[b]->outSize());
    blocks[b]->forward(in, batch, out_[b].data(), train, sync);
    in = out_[b].data();
  }
  const auto& last = blocks.back()->conv2;
  pooled_.resize(size_t(batch) * last.cout);
  gapForward(in, batch, last.cout, last.hout * last.wout, pooled_.data());
  logits_.resize(size_t(batch) * kNumClasses);
  fc->forward(pooled_.data(), batch, logits_.data());
  std::copy(logits_.begin(), logits_.end(), logits);
}

template <class T>
void ResNet<T>::backward(const T* dlogits, int batch, const std::function<void(int)>& onGradReady) {
  this->checkBackward(batch);
  const auto& last = blocks.back()->conv2;
  gPooled_.resize(size_t(batch) * last.cout);
  fc->backward(dlogits, batch, gPooled_.data(), onGradReady);
  gOut_.back().resize(size_t(batch) * blocks.back()->outSize());
  gapBackward(gPooled_.data(), batch, last.cout, last.hout * last.wout, gOut_.back().data());
  const size_t nStem = size_t(batch) * stemConv->outSize();
  for (size_t b = blocks.size(); b-- > 0;) {
    std::vector<T>& din = b > 0 ? gOut_[b - 1] : gStem_;
    din.resize(b > 0 ? size_t(batch) * blocks[b - 1]->outSize() : nStem);
    blocks[b]->backward(gOut_[b].data(), batch, din.data(), onGradReady);
  }
  reluBackward(stemA_.data(), gStem_.data(), nStem, gStem_.data());
  stemBn->backward(gStem_.data(), batch, gStem_.data(), onGradReady);
  T* dx = nullptr;
  if (this->computeInputGrad) {
    this->dx_.resize(size_t(batch) * kImagePixels);
    dx = this->dx_.data();
  }
  stemConv->backward(gStem_.data(), batch, dx, onGradReady);
}

template <class T>
std::unique_ptr<Net<T>> makeNet(const ModelConfig& cfg) {
  blasSingleThread();
  if (cfg.kind == "mlp") return std::make_unique<Mlp<T>>(cfg.mlpHidden, cfg.seed);
  if (cfg.kind == "resnet") return std::make_unique<ResNet<T>>(cfg.resnetWidth, cfg.resnetBlocks, cfg.seed);
  throw std::invalid_argument("unknown model kind '" + cfg.kind + "' (mlp or resnet)");
}

template class Net<float>;
template class Net<double>;
template class Mlp<float>;
template class Mlp<double>;
template class ResNet<float>;
template class ResNet<double>;
template std::unique_ptr<Net<float>> makeNet<float>(const ModelConfig&);
template std::unique_ptr<Net<double>> makeNet<double>(const ModelConfig&);

}  // namespace coll::train::nn
