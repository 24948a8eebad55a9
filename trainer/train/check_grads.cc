#include "train/check_grads.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include "data/idx.h"
#include "data/sampler.h"
#include "ddp/grad_reducer.h"
#include "ddp/sgd.h"
#include "ddp/shard_comm.h"

namespace coll::train {
namespace {

constexpr double kGradBound = 1e-5;
constexpr double kParamBound = 1e-5;

struct Mismatch {
  double err = 0;       // normwise relative error of the tensor
  size_t worst = 0;     // element with the largest difference
  double got = 0, want = 0;
};

Mismatch compare(const float* got, const float* want, size_t n) {
  Mismatch m;
  double maxRef = 0, maxDiff = 0;
  for (size_t i = 0; i < n; ++i) {
    maxRef = std::max(maxRef, std::fabs(static_cast<double>(want[i])));
    double d = std::fabs(static_cast<double>(got[i]) - want[i]);
    if (d > maxDiff) {
      maxDiff = d;
      m.worst = i;
    }
  }
  m.err = maxRef > 0 ? maxDiff / maxRef : maxDiff;
  if (n > 0) {
    m.got = got[m.worst];
    m.want = want[m.worst];
  }
  return m;
}

// Compares tensor lists; prints the worst tensors and every failing one
// (with its worst element) on rank 0.  Returns the largest error.
double report(const RunContext& ctx, const char* what, const std::vector<Param>& got, const std::vector<Param>& want,
              bool grads, double bound, int* failures) {
  double worst = 0;
  std::string worstName;
  for (size_t t = 0; t < got.size(); ++t) {
    Mismatch m = grads ? compare(got[t].grad, want[t].grad, got[t].count)
                       : compare(got[t].value, want[t].value, got[t].count);
    if (m.err > worst) {
      worst = m.err;
      worstName = got[t].name;
    }
    if (m.err > bound) {
      ++*failures;
      if (*failures <= 5)
        fprintf(stderr, "rank %d: %s MISMATCH %s: error %.3g > %.0e; worst element [%zu]: %.9g vs %.9g (reference)\n",
                ctx.rank, what, got[t].name.c_str(), m.err, bound, m.worst, m.got, m.want);
    }
  }
  say(ctx, fmt::format("  {}: {} tensors, largest error {:.3g} ({}), bound {:.0e}", what, got.size(), worst,
                       worstName, bound));
  return worst;
}

}  // namespace

int runGradCheck(const TrainOptions& o, const RunContext& ctx) {
  auto trainR = loadFashionMnist(o.dataDir, true);
  if (!trainR.isOk()) {
    fprintf(stderr, "coll-train rank %d: %s\n", ctx.rank, trainR.status().message().c_str());
    return 1;
  }
  const Dataset& train = trainR.value();
  ModelConfig mc = o.model;
  const bool syncBn = mc.kind == "resnet";
  auto dist = makeModel(mc);
  auto ref = makeModel(mc);
  std::vector<Param> dp = dist->params(), rp = ref->params();
  std::vector<Param> dbuf = dist->buffers(), rbuf = ref->buffers();
  // Same start everywhere: rank 0's parameters, copied into the reference.
  std::string err = ctx.broadcastFromRank0(dp);
  if (err.empty()) err = ctx.broadcastFromRank0(dbuf);
  if (!err.empty()) {
    fprintf(stderr, "coll-train rank %d: %s\n", ctx.rank, err.c_str());
    return 1;
  }
  for (size_t t = 0; t < dp.size(); ++t) std::copy(dp[t].value, dp[t].value + dp[t].count, rp[t].value);
  for (size_t t = 0; t < dbuf.size(); ++t) std::copy(dbuf[t].value, dbuf[t].value + dbuf[t].count, rbuf[t].value);

  const int N = ctx.nranks, B = o.batch, G = N * B;
  DistributedSampler sampler(train.count, ctx.rank, N, B, o.seed, true, true);
  sampler.setEpoch(0);
  const std::vector<int> order = sampler.globalOrder(0);
  const int steps = 1 + std::max(0, o.checkSteps);
  if (static_cast<long>(steps) * G > train.count) {
    fprintf(stderr, "coll-train: --check-grads needs %d samples, have %d\n", steps * G, train.count);
    return 1;
  }
  // --shard-optimizer: reduce-scatter, update this rank's pieces, all-gather.
  std::vector<size_t> counts;
  std::vector<float*> values, grads;
  for (const Param& p : dp) {
    counts.push_back(p.count);
    values.push_back(p.value);
    grads.push_back(p.grad);
  }
  const ShardLayout layout = shardTensors(counts, ctx.rank, N);
  GradReducer reducer(dp, static_cast<size_t>(o.bucketMB * 1e6), ctx.worker, o.shardOptimizer ? &layout : nullptr);
  Sgd dsgd(dp, o.sgd, 1), rsgd(rp, o.sgd, 1);  // same lr on both sides: no linear scaling here
  if (o.shardOptimizer) dsgd.shard(layout);
  BatchNormSync sync = ctx.batchNormSync();
  say(ctx, fmt::format("check-grads: {} on {} ranks x batch {} against one process with batch {}{}{}", dist->name(), N,
                       B, G, syncBn ? " (synchronized batch norm)" : "",
                       o.shardOptimizer ? ", optimizer sharded (reduce-scatter, update 1/N, all-gather)" : ""));

  std::vector<float> xl(static_cast<size_t>(B) * kImagePixels), xg(static_cast<size_t>(G) * kImagePixels);
  std::vector<float> ll(static_cast<size_t>(B) * kNumClasses), lg(static_cast<size_t>(G) * kNumClasses);
  std::vector<float> dl(ll.size()), dg(lg.size());
  std::vector<int> yl(B), yg(G);
  int failures = 0;
  try {
    for (int s = 0; s < steps; ++s) {
      // Local batch by the sampler's rule; it must be this rank's block of
      // the global batch, or the comparison would be meaningless.
      std::vector<int> local = sampler.batch(s);
      if (!std::equal(local.begin(), local.end(), order.begin() + static_cast<long>(s) * G + static_cast<long>(ctx.rank) * B)) {
        fprintf(stderr, "rank %d: the sampler's batch is not this rank's block of the global batch\n", ctx.rank);
        return 1;
      }
      normalizeInto(train, local.data(), B, xl.data(), yl.data());
      dist->forward(xl.data(), B, ll.data(), true, syncBn ? &sync : nullptr);
      softmaxCrossEntropy(ll.data(), yl.data(), B, B, dl.data());
      reducer.beginMicroStep(true);
      dist->backward(dl.data(), B, [&](int i) { reducer.gradReady(i); });
      err = reducer.finish();
      if (!err.empty()) {
        fprintf(stderr, "rank %d: all-reduce failed: %s\n", ctx.rank, err.c_str());
        return 1;
      }
      normalizeInto(train, order.data() + static_cast<long>(s) * G, G, xg.data(), yg.data());
      ref->forward(xg.data(), G, lg.data(), true);
      softmaxCrossEntropy(lg.data(), yg.data(), G, G, dg.data());
      ref->backward(dg.data(), G, {});
      if (s == 0) {
        // Sharded, each rank holds the average of its pieces only: gather
        // them all so every element of the reduce-scatter is compared.
        if (o.shardOptimizer) {
          err = gatherAll(*ctx.worker, grads, layout);
          if (!err.empty()) {
            fprintf(stderr, "rank %d: gradient all-gather failed: %s\n", ctx.rank, err.c_str());
            return 1;
          }
        }
        report(ctx, o.shardOptimizer ? "gradients after reduce-scatter" : "gradients after all-reduce", dp, rp, true,
               kGradBound, &failures);
      }
      dsgd.step(s);
      rsgd.step(s);
      if (o.shardOptimizer) {
        err = gatherAll(*ctx.worker, values, layout);
        if (!err.empty()) {
          fprintf(stderr, "rank %d: parameter all-gather failed: %s\n", ctx.rank, err.c_str());
          return 1;
        }
      }
    }
  } catch (const std::exception& e) {
    fprintf(stderr, "rank %d: %s\n", ctx.rank, e.what());
    return 1;
  }
  report(ctx, fmt::format("parameters after {} SGD steps", steps).c_str(), dp, rp, false, kParamBound, &failures);
  // Every rank judged its own copy; the verdict counts all of them.
  double total[1] = {static_cast<double>(failures)};
  err = ctx.sumDoubles(total, 1);
  if (!err.empty()) return 1;
  say(ctx, total[0] == 0 ? "check-grads: PASS" : fmt::format("check-grads: FAIL ({} mismatching tensors)", total[0]));
  return total[0] == 0 ? 0 : 1;
}

}  // namespace coll::train
