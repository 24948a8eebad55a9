// model.h — the trainer's neural networks: an MLP and a small ResNet for
// 28x28 grayscale images (Fashion-MNIST), forward and backward written by
// hand (no autograd), float32.  The layers are templates on the scalar type
// (nn/layers.h); this interface is their float instantiation, and the tests
// check the very same code in float64 against finite differences.
//
// Determinism: for the same inputs, forward/backward give bit-identical
// results run to run (single-threaded, fixed summation orders; OpenBLAS, when
// used, is set to one thread).
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace coll::train {

struct Param {            // one trainable tensor
  std::string name;       // "fc1.weight", "block2.conv1.weight", "bn1.bias", ...
  float* value;           // count floats, owned by the model
  float* grad;            // count floats, owned by the model; backward WRITES (overwrites, not accumulates) it
  size_t count;
};

struct BatchNormSync {    // synchronized batch norm across ranks (optional)
  // Called inside forward (train mode) by every BN layer, on every rank in the same order, with
  // `n` doubles (per-channel sum, sum of squares, and the count) to be summed across ranks in place.
  //   forward:  n = 2*C+1: [sum_0..sum_{C-1}, sumsq_0..sumsq_{C-1}, count]
  // Also called inside backward (after a train-mode forward that had this sync), by every BN
  // layer in reverse layer order, with n = 2*C: [sum(dy)_0..sum(dy)_{C-1},
  // sum(dy*xhat)_0..sum(dy*xhat)_{C-1}] — without it the input gradients of a synchronized BN
  // would not match the one-process reference.  The BN params' own grads stay local (their
  // onGradReady comes before this call); data parallelism sums them like any other grad.
  // The object must stay alive until backward() returns.
  std::function<void(double* values, size_t n)> allReduceSum;
};

class Model {
 public:
  virtual ~Model() = default;
  virtual std::vector<Param> params() = 0;              // stable order = forward order
  virtual const char* name() const = 0;                 // "mlp" / "resnet"
  // x: [batch, 1, 28, 28] floats (already normalized), logits out: [batch, 10].
  // train=true uses batch statistics in BN (and updates running stats), false uses running stats.
  // x is copied; it need not outlive the call.  batch may be 0 (a data-parallel rank with an empty
  // share of the last batch): nothing is computed, but every BatchNormSync call still happens, and the
  // following backward writes zero grads; batch < 0 throws std::invalid_argument.
  virtual void forward(const float* x, int batch, float* logits, bool train, const BatchNormSync* sync = nullptr) = 0;
  // dlogits: [batch, 10]. Computes every param's grad (overwriting). Calls onGradReady(i) for param index i
  // (index into params()) as soon as that param's grad is final — in reverse layer order — so the caller can
  // start communicating a bucket while backward continues. May be empty.
  // `batch` must be the batch of the preceding forward (std::logic_error otherwise).
  virtual void backward(const float* dlogits, int batch, const std::function<void(int)>& onGradReady) = 0;
  // Non-trainable state that must be checkpointed (BN running mean/var): name -> (ptr, count).
  virtual std::vector<Param> buffers() = 0;             // grad == nullptr
};

inline constexpr int kImageSide = 28;
inline constexpr int kImagePixels = kImageSide * kImageSide;  // 784
inline constexpr int kNumClasses = 10;

struct ModelConfig {
  std::string kind = "mlp";                 // "mlp" or "resnet"
  std::vector<int> mlpHidden{1024, 1024};   // hidden widths (may be empty: a linear model)
  int resnetWidth = 16;                     // channels of the stem and block 1
  int resnetBlocks = 3;                     // blocks 2 and 3 halve the side and double the channels
  uint64_t seed = 1;
};

// Deterministic init from seed (same on every rank).  std::invalid_argument on a bad config.
std::unique_ptr<Model> makeModel(const ModelConfig& cfg);

// Softmax cross-entropy, with an explicit divisor: loss = sum_i CE_i / divisor,
// dlogits = d loss / d logits (may be nullptr). (Data-parallel ranks pass divisor = global batch so
// gradients add up exactly.)  Labels outside [0, 10) throw std::invalid_argument.
double softmaxCrossEntropy(const float* logits, const int* labels, int batch, double divisor, float* dlogits);
// Rows whose argmax (first maximum) equals the label.
int countCorrect(const float* logits, const int* labels, int batch);

// "OpenBLAS (1 thread, Cooperlake kernels)" or "built-in gemm (no OpenBLAS)":
// what matrix products run on.
const char* gemmBackend();

}  // namespace coll::train
