#include "train/run_context.h"

#include <cstdio>
#include <stdexcept>

namespace coll::train {

std::string RunContext::sumDoubles(double* values, size_t n) const {
  return worker->call([values, n](collComm_t c) {
    return collAllReduce(values, values, n, collFloat64, collSum, c, nullptr);
  });
}

std::string RunContext::broadcastFromRank0(const std::vector<Param>& tensors) const {
  for (const Param& p : tensors) {
    float* v = p.value;
    size_t n = p.count;
    worker->submit([v, n](collComm_t c) { return collBroadcast(v, v, n, collFloat32, 0, c, nullptr); });
  }
  return worker->drain();
}

BatchNormSync RunContext::batchNormSync() const {
  BatchNormSync s;
  const RunContext* self = this;
  s.allReduceSum = [self](double* values, size_t n) {
    std::string err = self->sumDoubles(values, n);
    // Inside the model's forward/backward there is no status to return:
    // the trainer catches this at the step and reports it.
    if (!err.empty()) throw std::runtime_error("sync batch norm: " + err);
  };
  return s;
}

void say(const RunContext& ctx, const std::string& line) {
  if (ctx.rank != 0) return;
  printf("%s\n", line.c_str());
  fflush(stdout);
}

}  // namespace coll::train
