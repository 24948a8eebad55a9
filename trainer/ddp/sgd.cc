#include "ddp/sgd.h"

#include <algorithm>
#include <cmath>

namespace coll::train {

Sgd::Sgd(std::vector<Param> params, SgdConfig cfg, int nranks)
    : params_(std::move(params)), cfg_(cfg), nranks_(nranks) {
  for (const auto& p : params_) {
    velocity_.emplace_back(p.count, 0.0f);
    names_.push_back(p.name + ".momentum");
  }
}

double Sgd::lrAt(long step) const {
  double lr = cfg_.lr * (cfg_.linearScaling ? nranks_ : 1);
  if (cfg_.warmupSteps > 0 && step < cfg_.warmupSteps) return lr * static_cast<double>(step + 1) / cfg_.warmupSteps;
  if (cfg_.cosine && cfg_.totalSteps > cfg_.warmupSteps) {
    double t = static_cast<double>(step - cfg_.warmupSteps) / static_cast<double>(cfg_.totalSteps - cfg_.warmupSteps);
    lr *= 0.5 * (1 + std::cos(M_PI * std::min(1.0, t)));
  }
  return lr;
}

void Sgd::step(long stepIndex) {
  const float lr = static_cast<float>(lrAt(stepIndex));
  const float mom = static_cast<float>(cfg_.momentum), wd = static_cast<float>(cfg_.weightDecay);
  for (size_t i = 0; i < params_.size(); ++i) {
    float* w = params_[i].value;
    const float* g = params_[i].grad;
    float* v = velocity_[i].data();
    for (size_t k = 0; k < params_[i].count; ++k) {
      float gk = g[k] + wd * w[k];
      v[k] = mom * v[k] + gk;
      w[k] -= lr * v[k];
    }
  }
}

std::vector<Param> Sgd::state() {
  std::vector<Param> out;
  for (size_t i = 0; i < params_.size(); ++i)
    out.push_back(Param{names_[i], velocity_[i].data(), nullptr, velocity_[i].size()});
  return out;
}

}  // namespace coll::train
