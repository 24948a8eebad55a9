#include "ddp/sgd.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>

namespace coll::train {

Sgd::Sgd(std::vector<Param> params, SgdConfig cfg, int nranks)
    : params_(std::move(params)), cfg_(cfg), nranks_(nranks) {
  for (const auto& p : params_) {
    velocity_.emplace_back(p.count, 0.0f);
    names_.push_back(p.name + ".momentum");
    ranges_.push_back({{0, p.count}});
  }
}

void Sgd::shard(const ShardLayout& layout) {
  if (layout.tensors.size() != params_.size()) throw std::invalid_argument("Sgd: the shard layout does not match the parameters");
  for (size_t i = 0; i < params_.size(); ++i) {
    const TensorShard& t = layout.tensors[i];
    if (t.count != params_[i].count) throw std::invalid_argument("Sgd: the shard layout does not match " + params_[i].name);
    ranges_[i].clear();
    if (t.end > t.begin) ranges_[i].emplace_back(t.begin, t.end);
    if (t.count > t.tail) ranges_[i].emplace_back(t.tail, t.count);
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
    for (const auto& [begin, end] : ranges_[i])
      for (size_t k = begin; k < end; ++k) {
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
