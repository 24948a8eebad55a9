// sampler.h — which samples each rank trains on, step by step.
//
// The rule (one process and N ranks see exactly the same samples):
//
//   perm = globalOrder(epoch)       a permutation of [0, datasetSize): a
//                                   Fisher-Yates shuffle driven by a
//                                   xoshiro256** generator seeded from
//                                   (seed, epoch) — the same on every rank,
//                                   compiler and standard library (no
//                                   std::shuffle / std::uniform_int_distribution);
//                                   the identity when shuffle is off.
//   G    = nranks * B               the global batch (B = localBatch)
//   step s, rank r:  perm[(s*nranks + r)*B, (s*nranks + r + 1)*B)
//
// i.e. the permutation is cut into blocks of B handed out round-robin, so the
// N local batches of step s concatenated in rank order are exactly
// perm[s*G, (s+1)*G): the global batch a single process with batch size G
// takes at step s.  The global batch depends on nranks*B only, not on how it
// is split, so a run may resume with another (nranks, B) of the same product.
//
// The last, incomplete global batch (datasetSize % G samples, R say):
//  - dropLast = true: dropped.  Every rank has floor(datasetSize / G) steps of
//    exactly B samples; R samples are not seen this epoch (a different R
//    each epoch when shuffling).
//  - dropLast = false: kept, so every sample is seen exactly once per epoch.
//    perm[steps*G, datasetSize) is split into nranks contiguous pieces in rank
//    order whose sizes differ by at most 1 (the first R % nranks ranks get one
//    more); concatenated in rank order they still equal the one-process last
//    batch.  Ranks thus end with unequal counts (differing by at most 1), and
//    when R < nranks some ranks have an EMPTY last batch.  The training loop
//    must handle that last uneven step: every rank still joins the all-reduce
//    (with zero gradients if its batch is empty), and gradients must be
//    weighted by the real global count — all-reduce the per-sample SUM of
//    gradients and divide by the global batch size (batchSize(s) summed over
//    ranks, which globalBatchSize(s) gives), not average per-rank means.
//
// Resuming: state() is (epoch, next step) plus what the order depends on;
// restore() refuses a state from a sampler with a different seed, dataset
// size, global batch, shuffle or dropLast.
#pragma once

#include <cstdint>
#include <vector>

#include "coll/base/status.h"

namespace coll::train {

// Where a sampler is, for checkpoints.
struct SamplerState {
  int64_t epoch = 0;
  int64_t step = 0;  // the next step to run in this epoch
  // What the order depends on; restore() checks them.
  uint64_t seed = 0;
  int64_t datasetSize = 0;
  int64_t globalBatch = 0;  // nranks * localBatch
  bool shuffle = true;
  bool dropLast = false;
};

class DistributedSampler {
 public:
  // datasetSize >= 0, 0 <= rank < nranks, localBatch >= 1; otherwise throws
  // std::invalid_argument naming the argument.
  DistributedSampler(int datasetSize, int rank, int nranks, int localBatch, uint64_t seed,
                     bool shuffle, bool dropLast);

  // Selects the epoch (>= 0) and rewinds to its step 0.
  void setEpoch(int64_t epoch);
  int64_t epoch() const { return epoch_; }

  // Steps in an epoch: ceil(datasetSize / G) with dropLast = false,
  // floor(datasetSize / G) with dropLast = true.  The same on every rank.
  int numSteps() const;
  // This rank's batch size at step s (B, or less at the last step).
  int batchSize(int step) const;
  // Samples in step s over all ranks (G, or less at the last step).
  int globalBatchSize(int step) const;
  // This rank's samples at step s of the current epoch (per the rule above).
  std::vector<int> batch(int step) const;
  // All of this rank's samples this epoch, in step order.
  std::vector<int> indices() const;
  // Samples this rank sees this epoch (sum of batchSize over the steps).
  int localCount() const;

  // The full permutation of [0, datasetSize) for an epoch: what the
  // one-process reference iterates over in blocks of G.
  std::vector<int> globalOrder(int64_t epoch) const;

  // Iteration with a position: the next step's batch, and advance.  Returns
  // false (and leaves *out empty) when the epoch is over.  Note that a true
  // return may come with an empty batch (last step, dropLast = false).
  bool next(std::vector<int>* out);
  int64_t step() const { return step_; }

  SamplerState state() const;
  // Continues from st (epoch and next step).  Fails if st came from a sampler
  // whose order differs (seed, datasetSize, global batch, shuffle, dropLast)
  // or its step is past the epoch's end.
  Status restore(const SamplerState& st);

  int datasetSize() const { return n_; }
  int rank() const { return rank_; }
  int nranks() const { return nranks_; }
  int localBatch() const { return b_; }
  uint64_t seed() const { return seed_; }

 private:
  const std::vector<int>& perm() const;  // of epoch_, cached
  // [begin, end) of this rank's slice of perm at a step.
  void range(int step, int64_t* begin, int64_t* end) const;

  int n_, rank_, nranks_, b_;
  uint64_t seed_;
  bool shuffle_, dropLast_;
  int64_t epoch_ = 0;
  int64_t step_ = 0;
  mutable int64_t cachedEpoch_ = -1;
  mutable std::vector<int> cachedPerm_;
};

// The generator behind globalOrder, exposed for tests: splitmix64 (seeding)
// and xoshiro256** (Blackman & Vigna), a bounded draw by Lemire's
// multiply-shift with rejection.
struct Xoshiro256ss {
  explicit Xoshiro256ss(uint64_t seed);
  uint64_t next();
  uint64_t below(uint64_t bound);  // uniform in [0, bound), bound >= 1
  uint64_t s[4];
};
uint64_t splitmix64(uint64_t* state);
// The generator seed of an epoch: mixes seed and epoch.
uint64_t epochSeed(uint64_t seed, int64_t epoch);

}  // namespace coll::train
