// harness.cc — see harness.h.
#include "harness.h"

#include <cmath>
#include <cstring>
#include <sstream>

namespace coll::simtest {

using sched::Algo;
using sched::CollKind;

namespace {

constexpr double kPreF64 = 3.0;
constexpr uint64_t kPreU64 = 3;
constexpr uint64_t kPostU64 = 0x9E3779B97F4A7C15ULL;  // odd: a bijection, so never a no-op

uint64_t splitmix(uint64_t& s) {
  uint64_t z = (s += 0x9E3779B97F4A7C15ULL);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
  return z ^ (z >> 31);
}

template <class T> T randomValue(uint64_t& s);
template <> double randomValue<double>(uint64_t& s) {
  return static_cast<double>(splitmix(s) >> 11) * 0x1.0p-52 - 1.0;  // [-1, 1)
}
template <> uint64_t randomValue<uint64_t>(uint64_t& s) { return splitmix(s); }

uint64_t caseSeed(const Case& c) {
  uint64_t s = 0x1234567;
  for (uint64_t v : {static_cast<uint64_t>(c.kind), static_cast<uint64_t>(c.algo),
                     static_cast<uint64_t>(c.nranks), static_cast<uint64_t>(c.root),
                     static_cast<uint64_t>(c.count)})
    s = splitmix(s) ^ v;
  return s;
}

// The reference: what the C API promises, computed with plain loops in
// canonical rank order; nothing here knows about schedules.
template <class T> struct Ref;
template <> struct Ref<double> {
  static double pre(double x) { return x * kPreF64; }
  static double post(double x, int n) { return x / n; }
};
template <> struct Ref<uint64_t> {
  static uint64_t pre(uint64_t x) { return x * kPreU64; }
  static uint64_t post(uint64_t x, int) { return x * kPostU64; }
};

template <class T>
std::vector<std::vector<T>> reference(const Case& c, const std::vector<std::vector<T>>& in,
                                      std::vector<std::vector<double>>* magnitude) {
  const int N = c.nranks;
  const size_t n = c.count, NN = static_cast<size_t>(N);
  std::vector<std::vector<T>> out(NN);
  magnitude->assign(NN, {});
  // Canonical-order reduction of element `at` of every rank's input.
  auto reduce = [&](size_t at, double* mag) {
    T acc = Ref<T>::pre(in[0][at]);
    double m = std::fabs(static_cast<double>(acc));
    for (int q = 1; q < N; ++q) {
      const T v = Ref<T>::pre(in[static_cast<size_t>(q)][at]);
      acc = acc + v;
      m += std::fabs(static_cast<double>(v));
    }
    *mag = m / N;
    return Ref<T>::post(acc, N);
  };
  for (size_t r = 0; r < NN; ++r) {
    auto& o = out[r];
    auto& mg = (*magnitude)[r];
    switch (c.kind) {
      case CollKind::AllReduce:
        if (r > 0) {  // every rank's result is rank 0's (N times less work at N ranks)
          o = out[0];
          mg = (*magnitude)[0];
          break;
        }
        o.resize(n);
        mg.resize(n);
        for (size_t i = 0; i < n; ++i) o[i] = reduce(i, &mg[i]);
        break;
      case CollKind::ReduceScatter:
        o.resize(n);
        mg.resize(n);
        for (size_t i = 0; i < n; ++i) o[i] = reduce(r * n + i, &mg[i]);
        break;
      case CollKind::Reduce:
        if (static_cast<int>(r) != c.root) break;
        o.resize(n);
        mg.resize(n);
        for (size_t i = 0; i < n; ++i) o[i] = reduce(i, &mg[i]);
        break;
      case CollKind::AllGather:
        o.resize(NN * n);
        for (size_t b = 0; b < NN; ++b)
          for (size_t i = 0; i < n; ++i) o[b * n + i] = in[b][i];
        break;
      case CollKind::Broadcast:
        o = in[static_cast<size_t>(c.root)];
        break;
      case CollKind::Send:
      case CollKind::Recv:
        if (r % 2 == 1) o = in[r - 1];
        break;
    }
  }
  return out;
}

template <class T>
void runTyped(const Case& c, const JobSpec& job, CaseOutcome* outcome) {
  uint64_t seed = caseSeed(c);
  std::vector<std::vector<T>> in(static_cast<size_t>(c.nranks));
  for (size_t r = 0; r < in.size(); ++r) {
    in[r].resize(job.ranks[r].inCount);
    for (auto& v : in[r]) v = randomValue<T>(seed);
  }
  // The reference needs every rank's input even where the collective ignores
  // it (Broadcast non-roots); generate those too, deterministically.
  std::vector<std::vector<T>> full = in;
  const size_t need = c.kind == CollKind::ReduceScatter ? static_cast<size_t>(c.nranks) * c.count
                                                        : c.count;
  for (auto& v : full)
    while (v.size() < need) v.push_back(randomValue<T>(seed));

  SimOptions opt;
  opt.fifoDepth = c.fifoDepth;
  opt.preF64 = kPreF64;
  opt.avgF64 = true;
  opt.preU64 = kPreU64;
  opt.postU64 = kPostU64;
  const SimResult<T> res = simulate<T>(job, in, opt);
  outcome->rounds = res.rounds;
  outcome->messages = res.messages;
  outcome->maxElemsSentByRank = res.maxElemsSentByRank;
  outcome->totalElemsSent = res.totalElemsSent;
  for (const auto& e : res.errors)
    outcome->failures.push_back(std::string(errorKindName(e.kind)) + ": " + e.message);
  if (!res.errors.empty()) return;

  std::vector<std::vector<double>> mag;
  const auto expect = reference<T>(c, full, &mag);
  // One-shot all-reduce sums in canonical order on every rank; one-shot
  // reduce-scatter starts from the owner's own term (in-place safe), so
  // like the ring it is checked to a tolerance.
  const bool exact = std::is_integral_v<T> || !job.reducing ||
                     (c.algo == Algo::OneShot && c.kind != CollKind::ReduceScatter) || c.nranks <= 2;
  size_t bad = 0;
  for (size_t r = 0; r < expect.size(); ++r) {
    const auto& e = expect[r];
    const auto& g = res.outputs[r];
    if (!job.ranks[r].outputExpected) continue;
    if (g.size() != e.size()) {
      outcome->failures.push_back("rank " + std::to_string(r) + ": Output has " +
                                  std::to_string(g.size()) + " elements, expected " +
                                  std::to_string(e.size()));
      continue;
    }
    for (size_t i = 0; i < e.size(); ++i) {
      bool ok;
      if (exact) {
        ok = sameBits(g[i], e[i]);
      } else {
        const double tol = 1e-12 * (mag[r][i] + 1e-300) * c.nranks;
        ok = std::fabs(static_cast<double>(g[i]) - static_cast<double>(e[i])) <= tol;
      }
      if (!ok && bad++ < 5) {
        std::ostringstream o;
        o.precision(17);
        o << "rank " << r << " Output[" << i << "] = " << g[i] << ", expected " << e[i];
        outcome->failures.push_back(o.str());
      }
    }
  }
  if (bad > 5) outcome->failures.push_back(std::to_string(bad) + " wrong elements in all");
}

}  // namespace

std::string describe(const Case& c) {
  std::ostringstream o;
  o << sched::collKindName(c.kind) << "/" << sched::algoName(c.algo) << " N=" << c.nranks
    << " root=" << c.root << " count=" << c.count << " nch=" << c.chunking.nchannels
    << " chunk=" << c.chunking.chunkElems << (c.integer ? " u64" : " f64")
    << " fifo=" << (c.fifoDepth ? std::to_string(c.fifoDepth) : std::string("inf"))
    << (c.inPlace ? " in-place" : "");
  return o.str();
}

JobSpec buildJob(const Case& c) {
  if (c.kind == CollKind::Send || c.kind == CollKind::Recv) {
    JobSpec job;
    job.name = "send/recv pairs";
    job.nranks = c.nranks;
    job.ranks.resize(static_cast<size_t>(c.nranks));
    job.schedules.resize(static_cast<size_t>(c.nranks));
    for (int r = 0; r + 1 < c.nranks; r += 2) {
      job.ranks[static_cast<size_t>(r)].inCount = c.count;
      job.ranks[static_cast<size_t>(r)].outputExpected = false;
      job.ranks[static_cast<size_t>(r) + 1].outCount = c.count;
      job.ranks[static_cast<size_t>(r) + 1].outputExpected = c.count > 0;
      job.schedules[static_cast<size_t>(r)] =
          sched::buildSchedule(CollKind::Send, c.algo, r, c.nranks, r + 1, c.count, c.chunking);
      job.schedules[static_cast<size_t>(r) + 1] =
          sched::buildSchedule(CollKind::Recv, c.algo, r + 1, c.nranks, r, c.count, c.chunking);
    }
    for (auto& L : job.ranks)
      if (L.outCount == 0) L.outputExpected = false;
    return job;
  }
  JobSpec job = collectiveJob(c.kind, c.nranks, c.root, c.count, c.inPlace);
  for (int r = 0; r < c.nranks; ++r)
    job.schedules.push_back(
        sched::buildSchedule(c.kind, c.algo, r, c.nranks, c.root, c.count, c.chunking));
  return job;
}

CaseOutcome runCase(const Case& c) { return runJob(c, buildJob(c)); }

CaseOutcome runJob(const Case& c, const JobSpec& job) {
  CaseOutcome out;
  if (c.integer)
    runTyped<uint64_t>(c, job, &out);
  else
    runTyped<double>(c, job, &out);
  return out;
}

}  // namespace coll::simtest
