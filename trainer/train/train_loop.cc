#include "train/train_loop.h"

#include <fmt/format.h>

#include <cmath>
#include <cstdio>
#include <fstream>
#include <stdexcept>

#include <unistd.h>

#include "checkpoint/checkpoint.h"
#include "data/idx.h"
#include "data/sampler.h"
#include "ddp/grad_reducer.h"
#include "ddp/sgd.h"
#include "ddp/shard_comm.h"
#include "coll/base/clock.h"

#ifndef COLL_TRAINER_PLOT_SCRIPT
#define COLL_TRAINER_PLOT_SCRIPT "trainer/plot_loss.py"
#endif

namespace coll::train {
namespace {

int fail(const RunContext& ctx, const std::string& what) {
  fprintf(stderr, "coll-train rank %d: %s\n", ctx.rank, what.c_str());
  return 1;
}

Dataset limited(Dataset d, long limit) {
  if (limit <= 0 || limit >= d.count) return d;
  d.count = static_cast<int>(limit);
  d.pixels.resize(static_cast<size_t>(d.count) * d.rows * d.cols);
  d.labels.resize(d.count);
  return d;
}

// Everything the checkpoint holds: parameters, momentum, BN buffers.
std::vector<TensorSlot> stateSlots(Model& m, Sgd& sgd) {
  std::vector<TensorSlot> out;
  for (const Param& p : m.params()) out.push_back({p.name, p.value, p.count});
  for (const Param& p : sgd.state()) out.push_back({p.name, p.value, p.count});
  for (const Param& p : m.buffers()) out.push_back({p.name, p.value, p.count});
  return out;
}

// Test accuracy: ranks split the test set, sums go round.
Result<double> evaluate(Model& m, const Dataset& test, const RunContext& ctx, int batch) {
  std::vector<int> idx;
  for (int i = ctx.rank; i < test.count; i += ctx.nranks) idx.push_back(i);
  std::vector<float> x(static_cast<size_t>(batch) * kImagePixels), logits(static_cast<size_t>(batch) * kNumClasses);
  std::vector<int> y(batch);
  double sums[2] = {0, 0};  // correct, seen
  for (size_t at = 0; at < idx.size(); at += batch) {
    int b = static_cast<int>(std::min<size_t>(batch, idx.size() - at));
    normalizeInto(test, idx.data() + at, b, x.data(), y.data());
    m.forward(x.data(), b, logits.data(), false);
    sums[0] += countCorrect(logits.data(), y.data(), b);
    sums[1] += b;
  }
  std::string err = ctx.sumDoubles(sums, 2);
  if (!err.empty()) return makeError(collRemoteError, "evaluation: {}", err);
  return sums[1] > 0 ? sums[0] / sums[1] : 0.0;
}

void writeParams(const std::string& path, Model& m) {
  std::ofstream f(path, std::ios::binary);
  for (const Param& p : m.params()) f.write(reinterpret_cast<const char*>(p.value), p.count * sizeof(float));
  for (const Param& p : m.buffers()) f.write(reinterpret_cast<const char*>(p.value), p.count * sizeof(float));
}

}  // namespace

int runTraining(const TrainOptions& o, const RunContext& ctx) {
  auto trainR = loadFashionMnist(o.dataDir, true);
  if (!trainR.isOk()) return fail(ctx, trainR.status().message());
  auto testR = loadFashionMnist(o.dataDir, false);
  if (!testR.isOk()) return fail(ctx, testR.status().message());
  const Dataset train = limited(trainR.take(), o.limitTrain);
  const Dataset test = limited(testR.take(), o.limitTest);

  auto model = makeModel(o.model);
  std::vector<Param> params = model->params();
  size_t nparams = 0;
  for (const auto& p : params) nparams += p.count;
  // Deterministic init is the same everywhere already; broadcasting from
  // rank 0 is what DDP does and makes that a guarantee, not an assumption.
  std::string err = ctx.broadcastFromRank0(params);
  if (err.empty()) err = ctx.broadcastFromRank0(model->buffers());
  if (!err.empty()) return fail(ctx, "broadcasting the initial parameters: " + err);

  // --shard-optimizer: this rank updates its piece of every tensor.
  std::vector<size_t> counts;
  std::vector<float*> values;
  for (const auto& p : params) {
    counts.push_back(p.count);
    values.push_back(p.value);
  }
  const ShardLayout layout = shardTensors(counts, ctx.rank, ctx.nranks);
  GradReducer reducer(params, static_cast<size_t>(o.bucketMB * 1e6), ctx.worker,
                      o.shardOptimizer ? &layout : nullptr);
  DistributedSampler sampler(train.count, ctx.rank, ctx.nranks, o.batch, o.seed, /*shuffle=*/true, o.dropLast);
  const int microPerEpoch = sampler.numSteps();
  if (microPerEpoch == 0)
    return fail(ctx, fmt::format("{} training samples are fewer than one global batch ({} ranks x {})", train.count,
                                 ctx.nranks, o.batch));
  const int stepsPerEpoch = (microPerEpoch + o.accumSteps - 1) / o.accumSteps;
  SgdConfig sgdCfg = o.sgd;
  sgdCfg.totalSteps = static_cast<long>(stepsPerEpoch) * o.epochs;
  Sgd sgd(params, sgdCfg, ctx.nranks);
  if (o.shardOptimizer) sgd.shard(layout);
  std::vector<float*> momentum;
  for (const Param& p : sgd.state()) momentum.push_back(p.value);

  long globalStep = 0;
  int startEpoch = 0;
  if (o.resume) {
    auto ck = loadCheckpoint(o.checkpoint);
    if (!ck.isOk()) return fail(ctx, ck.status().message());
    auto slots = stateSlots(*model, sgd);
    Status s = restoreInto(ck.value(), slots);
    if (!s.isOk()) return fail(ctx, s.message());
    if (ck.value().meta.modelKind != model->name())
      return fail(ctx, fmt::format("checkpoint {} holds a {} model, not {}", o.checkpoint, ck.value().meta.modelKind,
                                   model->name()));
    globalStep = ck.value().meta.step;
    startEpoch = static_cast<int>(ck.value().meta.sampler.epoch);
    sampler.setEpoch(startEpoch);
    s = sampler.restore(ck.value().meta.sampler);
    if (!s.isOk()) return fail(ctx, "checkpoint " + o.checkpoint + ": " + s.message());
    say(ctx, fmt::format("resumed from {}: epoch {}, step {}", o.checkpoint, startEpoch + 1, globalStep));
  }
  say(ctx, fmt::format("coll-train: {} ({} parameters, {:.1f} MB of gradients in {} buckets: {}), {} ranks x batch {}"
                       "{}, {} train / {} test samples, {} steps per epoch, gemm: {}{}",
                       model->name(), nparams, nparams * 4 / 1e6, reducer.bucketCount(), reducer.describeBuckets(),
                       ctx.nranks, o.batch, o.accumSteps > 1 ? fmt::format(" x {} micro-steps", o.accumSteps) : "",
                       train.count, test.count, stepsPerEpoch, gemmBackend(),
                       o.shardOptimizer ? fmt::format(", optimizer sharded (ZeRO-1): {} of {} parameters updated here",
                                                      layout.updatedElements(), nparams)
                                        : ""));

  std::FILE* csv = nullptr;
  if (ctx.rank == 0 && !o.csv.empty()) {
    bool append = o.resume;
    csv = std::fopen(o.csv.c_str(), append ? "a" : "w");
    if (csv == nullptr) return fail(ctx, "cannot write " + o.csv);
    if (!append) std::fprintf(csv, "step,epoch,loss,lr,samples_per_s,compute_ms,comm_exposed_ms,comm_total_ms\n");
  }
  auto checkpoint = [&](int epoch) -> Status {
    if (o.checkpoint.empty()) return Status::ok();
    // Sharded: every rank holds the momentum of its pieces only; rank 0
    // writes all of it (every rank calls this at the same steps).
    if (o.shardOptimizer) {
      std::string gathered = gatherAll(*ctx.worker, momentum, layout);
      if (!gathered.empty()) return makeError(collRemoteError, "gathering the momentum for the checkpoint: {}", gathered);
    }
    if (ctx.rank != 0) return Status::ok();
    CheckpointMeta meta;
    meta.epoch = epoch;
    meta.step = globalStep;
    meta.sampler = sampler.state();
    meta.seed = o.seed;
    meta.modelKind = model->name();
    meta.extra["nranks"] = std::to_string(ctx.nranks);
    meta.extra["lr"] = fmt::format("{}", sgd.lrAt(globalStep));
    return saveCheckpoint(o.checkpoint, meta, asNamedTensors(stateSlots(*model, sgd)));
  };

  BatchNormSync sync = ctx.batchNormSync();
  const BatchNormSync* syncPtr = o.syncBatchNorm ? &sync : nullptr;
  std::vector<float> x(static_cast<size_t>(o.batch) * kImagePixels);
  std::vector<float> logits(static_cast<size_t>(o.batch) * kNumClasses), dlogits(logits.size());
  std::vector<int> y(o.batch);
  const double runStart = nowSeconds();
  bool stop = false;
  for (int epoch = startEpoch; epoch < o.epochs && !stop; ++epoch) {
    if (!(o.resume && epoch == startEpoch)) sampler.setEpoch(epoch);
    double winCompute = 0, winExposed = 0, winLoss = 0, winStart = nowSeconds();
    long winSamples = 0, winSteps = 0;
    ctx.worker->resetTimers();
    std::vector<int> batchIdx;
    int micro = static_cast<int>(sampler.step());
    try {
      while (!stop && sampler.next(&batchIdx)) {
        const int b = static_cast<int>(batchIdx.size());
        const int group = micro / o.accumSteps;
        const int groupStart = group * o.accumSteps;
        const int groupSize = std::min(o.accumSteps, microPerEpoch - groupStart);
        const bool last = micro == groupStart + groupSize - 1;
        double t0 = nowSeconds();
        normalizeInto(train, batchIdx.data(), b, x.data(), y.data());
        model->forward(x.data(), b, logits.data(), true, syncPtr);
        // Every rank divides its loss by (samples in the optimizer step) /
        // nranks, so the all-reduce's average over ranks is the mean over
        // exactly those samples: right for the last, smaller global batch
        // (where a rank's batch may even be empty) and for micro-steps.
        long stepSamples = 0;
        for (int s = groupStart; s < groupStart + groupSize; ++s) stepSamples += sampler.globalBatchSize(s);
        const double divisor = static_cast<double>(stepSamples) / ctx.nranks;
        winLoss += softmaxCrossEntropy(logits.data(), y.data(), b, divisor, dlogits.data());
        reducer.beginMicroStep(last);
        model->backward(dlogits.data(), b, [&](int i) { reducer.gradReady(i); });
        double t1 = nowSeconds();
        winCompute += t1 - t0;
        winSamples += sampler.globalBatchSize(micro);
        ++micro;
        if (!last) continue;
        err = reducer.finish();
        if (!err.empty()) return fail(ctx, fmt::format("step {}: gradient all-reduce failed: {}", globalStep, err));
        double t2 = nowSeconds();
        sgd.step(globalStep);
        double t3 = nowSeconds();
        winCompute += t3 - t2;
        winExposed += t2 - t1;
        if (o.shardOptimizer) {
          // Every rank's updated pieces, everywhere, before the next forward.
          err = gatherAll(*ctx.worker, values, layout);
          if (!err.empty()) return fail(ctx, fmt::format("step {}: parameter all-gather failed: {}", globalStep, err));
          winExposed += nowSeconds() - t3;
        }
        ++globalStep;
        ++winSteps;
        const bool logNow = globalStep % o.logEvery == 0 || micro == microPerEpoch;
        if (logNow) {
          double lossSum[1] = {winLoss};
          err = ctx.sumDoubles(lossSum, 1);
          if (!err.empty()) return fail(ctx, err);
          double loss = lossSum[0] / ctx.nranks / winSteps;
          double dt = nowSeconds() - winStart;
          double commTotal = ctx.worker->busySeconds();
          say(ctx, fmt::format("epoch {} step {}/{} loss {:.4f} lr {:.4g} | {:.0f} samples/s | per step {:.1f} ms: "
                               "compute {:.1f}, comm exposed {:.1f} (comm total {:.1f}, hidden behind backward "
                               "{:.0f}%)",
                               epoch + 1, (micro + o.accumSteps - 1) / o.accumSteps, stepsPerEpoch, loss,
                               sgd.lrAt(globalStep - 1), winSamples / dt, 1e3 * dt / winSteps,
                               1e3 * winCompute / winSteps, 1e3 * winExposed / winSteps, 1e3 * commTotal / winSteps,
                               commTotal > 0 ? 100.0 * std::max(0.0, 1 - winExposed / commTotal) : 0.0));
          if (csv)
            std::fprintf(csv, "%ld,%d,%.6f,%.6g,%.1f,%.3f,%.3f,%.3f\n", globalStep, epoch + 1, loss,
                         sgd.lrAt(globalStep - 1), winSamples / dt, 1e3 * winCompute / winSteps,
                         1e3 * winExposed / winSteps, 1e3 * commTotal / winSteps);
          winCompute = winExposed = winLoss = 0;
          winSamples = winSteps = 0;
          winStart = nowSeconds();
          ctx.worker->resetTimers();
        }
        if (o.checkpointEvery > 0 && globalStep % o.checkpointEvery == 0) {
          Status s = checkpoint(epoch);
          if (!s.isOk()) return fail(ctx, s.message());
        }
        if (o.stopAfterSteps > 0 && globalStep >= o.stopAfterSteps) stop = true;
      }
    } catch (const std::exception& e) {
      return fail(ctx, fmt::format("step {}: {}", globalStep, e.what()));
    }
    if (stop) {
      Status s = checkpoint(epoch);
      if (!s.isOk()) return fail(ctx, s.message());
      say(ctx, fmt::format("stopped after {} steps (--stop-after-steps){}", globalStep,
                           o.checkpoint.empty() ? "" : ", checkpoint " + o.checkpoint));
      break;
    }
    auto acc = evaluate(*model, test, ctx, 256);
    if (!acc.isOk()) return fail(ctx, acc.status().message());
    say(ctx, fmt::format("epoch {} done: test accuracy {:.2f}% ({:.1f} s so far)", epoch + 1, 100 * acc.value(),
                         nowSeconds() - runStart));
    // The next epoch starts at its step 0: that is what a resume continues.
    sampler.setEpoch(epoch + 1);
    Status s = checkpoint(epoch + 1);
    if (!s.isOk()) return fail(ctx, s.message());
  }
  if (csv) std::fclose(csv);
  if (ctx.rank == 0 && !o.dumpParams.empty()) writeParams(o.dumpParams, *model);
  if (ctx.rank == 0 && !o.plot.empty()) {
    if (o.csv.empty()) return fail(ctx, "--plot needs --csv");
    // Debian's python3-matplotlib lives with /usr/bin/python3, which a
    // python3 earlier on PATH (pyenv, venv) may not see.
    const char* py = access("/usr/bin/python3", X_OK) == 0 ? "/usr/bin/python3" : "python3";
    std::string cmd = fmt::format("{} '{}' '{}' '{}'", py, COLL_TRAINER_PLOT_SCRIPT, o.csv, o.plot);
    if (std::system(cmd.c_str()) != 0) return fail(ctx, "plotting failed: " + cmd);
    say(ctx, "loss curve: " + o.plot);
  }
  return 0;
}

}  // namespace coll::train
