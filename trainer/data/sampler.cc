#include "data/sampler.h"

#include <algorithm>
#include <numeric>
#include <stdexcept>
#include <string>

namespace coll::train {

uint64_t splitmix64(uint64_t* state) {
  uint64_t z = (*state += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

uint64_t epochSeed(uint64_t seed, int64_t epoch) {
  uint64_t x = seed;
  const uint64_t a = splitmix64(&x);
  x = a ^ (static_cast<uint64_t>(epoch) * 0xD1B54A32D192ED03ull + 0x632BE59BD9B4E019ull);
  return splitmix64(&x);
}

Xoshiro256ss::Xoshiro256ss(uint64_t seed) {
  uint64_t sm = seed;
  for (uint64_t& w : s) w = splitmix64(&sm);
}

static inline uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }

uint64_t Xoshiro256ss::next() {
  const uint64_t result = rotl(s[1] * 5, 7) * 9;
  const uint64_t t = s[1] << 17;
  s[2] ^= s[0];
  s[3] ^= s[1];
  s[1] ^= s[2];
  s[0] ^= s[3];
  s[2] ^= t;
  s[3] = rotl(s[3], 45);
  return result;
}

uint64_t Xoshiro256ss::below(uint64_t bound) {
  // Lemire, "Fast random integer generation in an interval" (2019): unbiased.
  unsigned __int128 m = static_cast<unsigned __int128>(next()) * bound;
  uint64_t low = static_cast<uint64_t>(m);
  if (low < bound) {
    const uint64_t threshold = (0 - bound) % bound;
    while (low < threshold) {
      m = static_cast<unsigned __int128>(next()) * bound;
      low = static_cast<uint64_t>(m);
    }
  }
  return static_cast<uint64_t>(m >> 64);
}

DistributedSampler::DistributedSampler(int datasetSize, int rank, int nranks, int localBatch,
                                       uint64_t seed, bool shuffle, bool dropLast)
    : n_(datasetSize),
      rank_(rank),
      nranks_(nranks),
      b_(localBatch),
      seed_(seed),
      shuffle_(shuffle),
      dropLast_(dropLast) {
  if (datasetSize < 0) {
    throw std::invalid_argument("DistributedSampler: datasetSize " + std::to_string(datasetSize) +
                                " < 0");
  }
  if (nranks < 1) {
    throw std::invalid_argument("DistributedSampler: nranks " + std::to_string(nranks) + " < 1");
  }
  if (rank < 0 || rank >= nranks) {
    throw std::invalid_argument("DistributedSampler: rank " + std::to_string(rank) +
                                " outside [0, " + std::to_string(nranks) + ")");
  }
  if (localBatch < 1) {
    throw std::invalid_argument("DistributedSampler: localBatch " + std::to_string(localBatch) +
                                " < 1");
  }
}

void DistributedSampler::setEpoch(int64_t epoch) {
  if (epoch < 0) {
    throw std::invalid_argument("DistributedSampler::setEpoch: epoch " + std::to_string(epoch) +
                                " < 0");
  }
  epoch_ = epoch;
  step_ = 0;
}

std::vector<int> DistributedSampler::globalOrder(int64_t epoch) const {
  std::vector<int> p(static_cast<size_t>(n_));
  std::iota(p.begin(), p.end(), 0);
  if (shuffle_ && n_ > 1) {
    Xoshiro256ss rng(epochSeed(seed_, epoch));
    for (size_t i = p.size() - 1; i > 0; --i) {
      const size_t j = static_cast<size_t>(rng.below(i + 1));
      std::swap(p[i], p[j]);
    }
  }
  return p;
}

const std::vector<int>& DistributedSampler::perm() const {
  if (cachedEpoch_ != epoch_) {
    cachedPerm_ = globalOrder(epoch_);
    cachedEpoch_ = epoch_;
  }
  return cachedPerm_;
}

int DistributedSampler::numSteps() const {
  const int64_t g = int64_t{nranks_} * b_;
  const int64_t full = n_ / g;
  const bool partial = !dropLast_ && (n_ % g) != 0;
  return static_cast<int>(full + (partial ? 1 : 0));
}

void DistributedSampler::range(int step, int64_t* begin, int64_t* end) const {
  const int64_t g = int64_t{nranks_} * b_;
  const int64_t full = n_ / g;
  if (step < 0 || step >= numSteps()) {
    *begin = *end = 0;
    return;
  }
  if (step < full) {
    *begin = (int64_t{step} * nranks_ + rank_) * b_;
    *end = *begin + b_;
    return;
  }
  // The last, incomplete global batch (dropLast = false): contiguous pieces
  // in rank order, sizes differing by at most 1.
  const int64_t base = full * g;
  const int64_t rest = n_ - base;
  const int64_t q = rest / nranks_, rem = rest % nranks_;
  *begin = base + rank_ * q + std::min<int64_t>(rank_, rem);
  *end = *begin + q + (rank_ < rem ? 1 : 0);
}

int DistributedSampler::batchSize(int step) const {
  int64_t b = 0, e = 0;
  range(step, &b, &e);
  return static_cast<int>(e - b);
}

int DistributedSampler::globalBatchSize(int step) const {
  if (step < 0 || step >= numSteps()) return 0;
  const int64_t g = int64_t{nranks_} * b_;
  return static_cast<int>(std::min<int64_t>(g, n_ - int64_t{step} * g));
}

std::vector<int> DistributedSampler::batch(int step) const {
  int64_t b = 0, e = 0;
  range(step, &b, &e);
  const std::vector<int>& p = perm();
  return std::vector<int>(p.begin() + b, p.begin() + e);
}

std::vector<int> DistributedSampler::indices() const {
  std::vector<int> out;
  out.reserve(static_cast<size_t>(localCount()));
  const std::vector<int>& p = perm();
  const int steps = numSteps();
  for (int s = 0; s < steps; ++s) {
    int64_t b = 0, e = 0;
    range(s, &b, &e);
    out.insert(out.end(), p.begin() + b, p.begin() + e);
  }
  return out;
}

int DistributedSampler::localCount() const {
  const int steps = numSteps();
  if (steps == 0) return 0;
  return (steps - 1) * b_ + batchSize(steps - 1);
}

bool DistributedSampler::next(std::vector<int>* out) {
  out->clear();
  if (step_ >= numSteps()) return false;
  *out = batch(static_cast<int>(step_));
  ++step_;
  return true;
}

SamplerState DistributedSampler::state() const {
  SamplerState st;
  st.epoch = epoch_;
  st.step = step_;
  st.seed = seed_;
  st.datasetSize = n_;
  st.globalBatch = int64_t{nranks_} * b_;
  st.shuffle = shuffle_;
  st.dropLast = dropLast_;
  return st;
}

Status DistributedSampler::restore(const SamplerState& st) {
  const int64_t g = int64_t{nranks_} * b_;
  if (st.seed != seed_) {
    return makeError(collInvalidArgument, "sampler restore: the state has seed {}, this sampler {}",
                     st.seed, seed_);
  }
  if (st.datasetSize != n_) {
    return makeError(collInvalidArgument,
                     "sampler restore: the state is for a dataset of {} samples, this sampler has {}",
                     st.datasetSize, n_);
  }
  if (st.globalBatch != g) {
    return makeError(collInvalidArgument,
                     "sampler restore: the state has global batch {}, this sampler {} ({} ranks x {}); "
                     "the order depends on nranks*localBatch",
                     st.globalBatch, g, nranks_, b_);
  }
  if (st.shuffle != shuffle_ || st.dropLast != dropLast_) {
    return makeError(collInvalidArgument,
                     "sampler restore: the state has shuffle={} dropLast={}, this sampler "
                     "shuffle={} dropLast={}",
                     st.shuffle, st.dropLast, shuffle_, dropLast_);
  }
  if (st.epoch < 0 || st.step < 0 || st.step > numSteps()) {
    return makeError(collInvalidArgument,
                     "sampler restore: epoch {} step {} is invalid (an epoch has {} steps)",
                     st.epoch, st.step, numSteps());
  }
  epoch_ = st.epoch;
  step_ = st.step;
  return Status::ok();
}

}  // namespace coll::train
