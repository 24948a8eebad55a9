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

// Gradients: per tensor, max_i |g_i - r_i| / max_i |r_i| <= kGradBound
// (why 1e-5: docs/trainer.md, "The gradient check").
constexpr double kGradBound = 1e-5;
// float32's machine epsilon 2^-23 = 2u (u = 2^-24, the unit roundoff): the
// parameter bound's rounding terms use it, i.e. twice the first-order terms,
// which also covers every second-order term.
constexpr double kEps = 0x1p-23;

// The largest |x_i| of a tensor.
double maxAbs(const float* x, size_t n) {
  double m = 0;
  for (size_t i = 0; i < n; ++i) m = std::max(m, std::fabs(static_cast<double>(x[i])));
  return m;
}

struct Mismatch {
  double diff = 0;      // max_i |got_i - want_i|
  size_t worst = 0;     // element with the largest difference
  double got = 0, want = 0;
};

Mismatch compare(const float* got, const float* want, size_t n) {
  Mismatch m;
  for (size_t i = 0; i < n; ++i) {
    double d = std::fabs(static_cast<double>(got[i]) - want[i]);
    if (d > m.diff) {
      m.diff = d;
      m.worst = i;
    }
  }
  if (n > 0) {
    m.got = got[m.worst];
    m.want = want[m.worst];
  }
  return m;
}

// The worst ratio (difference / allowed difference) seen over all steps.
struct Worst {
  double ratio = 0, err = 0;
  std::string name;
  int step = 0;
};

// One comparison: `m.diff` against `allowed`; prints a failing tensor (the
// first few) and records the worst.  `err` is what is printed as the error.
void judge(const RunContext& ctx, const char* what, int step, const std::string& name, const Mismatch& m,
           double allowed, double err, const char* unit, Worst* worst, int* failures) {
  const double ratio = allowed > 0 ? m.diff / allowed : (m.diff > 0 ? INFINITY : 0);
  if (ratio > worst->ratio || worst->name.empty()) *worst = Worst{ratio, err, name, step};
  if (ratio > 1) {
    ++*failures;
    if (*failures <= 5)
      fprintf(stderr,
              "rank %d: %s, step %d, MISMATCH %s: %s %.3g > bound %.3g; worst element [%zu]: %.9g vs %.9g (reference)\n",
              ctx.rank, what, step, name.c_str(), unit, err, err / ratio, m.worst, m.got, m.want);
  }
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
  const char* gradWhat = o.shardOptimizer ? "gradients after reduce-scatter" : "gradients after all-reduce";
  std::vector<Param> dvel = dsgd.state(), rvel = rsgd.state();  // momentum buffers (full size on both)
  Worst gradWorst, paramWorst;
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
      // Sharded, each rank holds the average of its pieces only: gather
      // them all so every element of the reduce-scatter is compared.
      if (o.shardOptimizer) {
        err = gatherAll(*ctx.worker, grads, layout);
        if (!err.empty()) {
          fprintf(stderr, "rank %d: gradient all-gather failed: %s\n", ctx.rank, err.c_str());
          return 1;
        }
      }
      // Gradients of this step, both sides from the same parameters.
      for (size_t t = 0; t < dp.size(); ++t) {
        const Mismatch m = compare(dp[t].grad, rp[t].grad, dp[t].count);
        const double scale = maxAbs(rp[t].grad, rp[t].count);
        judge(ctx, gradWhat, s, dp[t].name, m, kGradBound * scale, scale > 0 ? m.diff / scale : m.diff, "error",
              &gradWorst, &failures);
      }
      // The reference's state before its SGD step, for the parameter bound.
      std::vector<double> gScale(rp.size()), vPrev(rp.size());
      for (size_t t = 0; t < rp.size(); ++t) {
        gScale[t] = maxAbs(rp[t].grad, rp[t].count);
        vPrev[t] = maxAbs(rvel[t].value, rvel[t].count);
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
      // Parameters after this step.  Both sides stepped from the same w and
      // velocity v, so w_d - w_r = -lr (g_d - g_r) plus SGD's own rounding:
      //   |w_d - w_r| <= lr (kGradBound G + 4 eps V) + eps P   per element,
      // G = max |g_r|, V = max |v| (before or after the step), P = max |w_r|
      // after it (docs/trainer.md).  A bound on the step, not on the
      // parameter's size: a bias that starts at 0 is no special case.
      const double lr = rsgd.lrAt(s);
      for (size_t t = 0; t < dp.size(); ++t) {
        const Mismatch m = compare(dp[t].value, rp[t].value, dp[t].count);
        const double V = std::max(vPrev[t], maxAbs(rvel[t].value, rvel[t].count));
        const double P = maxAbs(rp[t].value, rp[t].count);
        const double allowed = lr * (kGradBound * gScale[t] + 4 * kEps * V) + kEps * P;
        judge(ctx, "parameters after SGD", s, dp[t].name, m, allowed, m.diff, "|diff|", &paramWorst, &failures);
      }
      // The next step starts both sides from the same state again: the
      // reference's parameters and momentum.  Without this, rounding
      // differences grow step by step (training amplifies a 1-ulp change of
      // the parameters into 1e-3 relative within 4 steps, docs/trainer.md),
      // and no bound from rounding would hold for every --check-steps.
      for (size_t t = 0; t < dp.size(); ++t) {
        std::copy(rp[t].value, rp[t].value + rp[t].count, dp[t].value);
        std::copy(rvel[t].value, rvel[t].value + rvel[t].count, dvel[t].value);
      }
      for (size_t t = 0; t < dbuf.size(); ++t) std::copy(rbuf[t].value, rbuf[t].value + rbuf[t].count, dbuf[t].value);
    }
  } catch (const std::exception& e) {
    fprintf(stderr, "rank %d: %s\n", ctx.rank, e.what());
    return 1;
  }
  say(ctx, fmt::format("  {}, {} steps: {} tensors, largest error {:.3g} ({}, step {}), bound {:.0e}", gradWhat,
                       steps, dp.size(), gradWorst.err, gradWorst.name, gradWorst.step, kGradBound));
  say(ctx, fmt::format("  parameters after each of {} SGD steps from a common state: largest |diff| {:.3g} of its "
                       "bound ({}, step {})",
                       steps, paramWorst.ratio, paramWorst.name, paramWorst.step));
  // Every rank judged its own copy; the verdict counts all of them.
  double total[1] = {static_cast<double>(failures)};
  err = ctx.sumDoubles(total, 1);
  if (!err.empty()) return 1;
  say(ctx, total[0] == 0 ? "check-grads: PASS" : fmt::format("check-grads: FAIL ({} mismatching tensors)", total[0]));
  return total[0] == 0 ? 0 : 1;
}

}  // namespace coll::train
