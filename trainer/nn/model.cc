// model.cc — the public float interface (model.h) over Net<float>.
#include "nn/model.h"

#include <cstdlib>
#include <stdexcept>
#include <string>

#include "nn/gemm.h"
#include "nn/net.h"

namespace coll::train {

namespace {

std::vector<Param> toParams(const std::vector<nn::ParamT<float>>& ps) {
  std::vector<Param> out;
  out.reserve(ps.size());
  for (const auto& p : ps) out.push_back({p.name, p.value, p.grad, p.count});
  return out;
}

class FloatModel final : public Model {
 public:
  explicit FloatModel(std::unique_ptr<nn::Net<float>> net) : net_(std::move(net)) {}
  std::vector<Param> params() override { return toParams(net_->params()); }
  const char* name() const override { return net_->name(); }
  void forward(const float* x, int batch, float* logits, bool train, const BatchNormSync* sync) override {
    net_->forward(x, batch, logits, train, sync);
  }
  void backward(const float* dlogits, int batch, const std::function<void(int)>& onGradReady) override {
    net_->backward(dlogits, batch, onGradReady);
  }
  std::vector<Param> buffers() override { return toParams(net_->buffers()); }

 private:
  std::unique_ptr<nn::Net<float>> net_;
};

}  // namespace

std::unique_ptr<Model> makeModel(const ModelConfig& cfg) {
  return std::make_unique<FloatModel>(nn::makeNet<float>(cfg));
}

double softmaxCrossEntropy(const float* logits, const int* labels, int batch, double divisor, float* dlogits) {
  return nn::softmaxCE(logits, labels, batch, kNumClasses, divisor, dlogits);
}

int countCorrect(const float* logits, const int* labels, int batch) {
  int correct = 0;
  for (int n = 0; n < batch; ++n) {
    const float* row = logits + size_t(n) * kNumClasses;
    int best = 0;
    for (int j = 1; j < kNumClasses; ++j)
      if (row[j] > row[best]) best = j;
    correct += best == labels[n];
  }
  return correct;
}

const char* gemmBackend() {
#if COLL_TRAINER_HAVE_OPENBLAS
  static const std::string name = [] {
    const char* forced = std::getenv("OPENBLAS_CORETYPE");
    std::string s = std::string("OpenBLAS (1 thread, ") + nn::blasKernels() + " kernels";
    if (forced != nullptr && *forced != 0) s += std::string(", set by OPENBLAS_CORETYPE=") + forced;
    return s + ")";
  }();
  return name.c_str();
#else
  return "built-in gemm (no OpenBLAS)";
#endif
}

}  // namespace coll::train
