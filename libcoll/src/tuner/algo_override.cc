#include "tuner/algo_override.h"

#include "coll/base/env.h"

namespace coll::tune {
namespace {

using sched::Algo;
using sched::CollKind;

constexpr CollKind kColls[] = {CollKind::AllReduce, CollKind::AllGather, CollKind::ReduceScatter,
                               CollKind::Broadcast, CollKind::Reduce};
constexpr Algo kAlgos[] = {Algo::Ring, Algo::Tree, Algo::OneShot, Algo::Pipeline, Algo::Doubling, Algo::Halving};

std::optional<CollKind> collByName(const std::string& s) {
  for (CollKind k : kColls)
    if (s == sched::collKindName(k)) return k;
  return std::nullopt;
}

std::optional<Algo> algoByName(const std::string& s) {
  for (Algo a : kAlgos)
    if (s == sched::algoName(a)) return a;
  return std::nullopt;
}

std::vector<std::string> split(const std::string& s, char sep) {
  std::vector<std::string> out;
  size_t start = 0;
  for (;;) {
    size_t p = s.find(sep, start);
    out.push_back(env::trim(s.substr(start, p == std::string::npos ? std::string::npos : p - start)));
    if (p == std::string::npos) return out;
    start = p + 1;
  }
}

Result<AlgoRule> parseRule(CollKind coll, const std::string& text) {
  AlgoRule r{coll, Algo::Ring};
  std::string name = text, range;
  if (auto at = text.find('@'); at != std::string::npos) {
    name = env::trim(text.substr(0, at));
    range = env::trim(text.substr(at + 1));
  }
  auto algo = algoByName(name);
  if (!algo)
    return makeError(collInvalidArgument, "COLL_ALGO: unknown algorithm '{}' (known: ring, tree, oneshot, pipeline, doubling, halving)", name);
  if (!sched::algoSupports(coll, *algo))
    return makeError(collInvalidArgument, "COLL_ALGO: {} has no '{}' algorithm", sched::collKindName(coll), name);
  r.algo = *algo;
  if (!range.empty()) {
    auto dash = range.find('-');
    if (dash == std::string::npos)
      return makeError(collInvalidArgument, "COLL_ALGO: range '{}' must be lo-hi (e.g. 0-64K, 64K-inf)", range);
    auto lo = env::parseSize("COLL_ALGO", env::trim(range.substr(0, dash)));
    COLL_CHECK(lo.status());
    std::string hiText = env::trim(range.substr(dash + 1));
    r.lo = lo.value();
    if (hiText != "inf") {
      auto hi = env::parseSize("COLL_ALGO", hiText);
      COLL_CHECK(hi.status());
      r.hi = hi.value();
    }
    if (r.hi <= r.lo) return makeError(collInvalidArgument, "COLL_ALGO: empty range '{}'", range);
  }
  return r;
}

}  // namespace

Result<AlgoOverride> AlgoOverride::parse(const std::string& text) {
  AlgoOverride o;
  for (const std::string& entry : split(text, ';')) {
    if (entry.empty()) continue;
    auto colon = entry.find(':');
    if (colon == std::string::npos) {
      // A bare algorithm: every collective that has it.
      auto algo = algoByName(entry);
      if (!algo)
        return makeError(collInvalidArgument, "COLL_ALGO: '{}' is neither a collective:rules entry nor a known algorithm",
                         entry);
      bool any = false;
      for (CollKind k : kColls)
        if (sched::algoSupports(k, *algo)) {
          o.rules_.push_back({k, *algo, 0, SIZE_MAX});
          any = true;
        }
      if (!any) return makeError(collInvalidArgument, "COLL_ALGO: no collective has algorithm '{}'", entry);
      continue;
    }
    std::string collName = env::trim(entry.substr(0, colon));
    auto coll = collByName(collName);
    if (!coll)
      return makeError(collInvalidArgument,
                       "COLL_ALGO: unknown collective '{}' (known: allreduce, allgather, reducescatter, broadcast, reduce)",
                       collName);
    for (const std::string& ruleText : split(entry.substr(colon + 1), ',')) {
      if (ruleText.empty()) return makeError(collInvalidArgument, "COLL_ALGO: empty rule in '{}'", entry);
      auto rule = parseRule(*coll, ruleText);
      COLL_CHECK(rule.status());
      o.rules_.push_back(rule.value());
    }
  }
  return o;
}

std::optional<sched::Algo> AlgoOverride::lookup(sched::CollKind coll, size_t bytes) const {
  for (const AlgoRule& r : rules_)
    if (r.coll == coll && bytes >= r.lo && bytes < r.hi) return r.algo;
  return std::nullopt;
}

}  // namespace coll::tune
