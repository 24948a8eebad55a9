#include "fr_analyze.h"

#include <algorithm>
#include <map>
#include <set>
#include <tuple>

#include <fmt/format.h>

namespace coll::trace {

namespace {

// One rank's ring, indexed for look-ups.
struct RankIndex {
  const FrDump* dump = nullptr;
  std::vector<const FrCall*> colls;                          // in coll_seq order (the ring's)
  std::map<std::tuple<bool, int, int64_t>, const FrCall*> p2p;  // (send?, peer, p2p_seq)

  explicit RankIndex(const FrDump& d) : dump(&d) {
    for (const FrCall& c : d.calls) {
      if (c.collSeq == -1 && c.p2pSeq == -1) continue;  // unnumbered (device buffers)
      if (isP2p(c.op)) {
        p2p[{c.op == FrOp::Send, c.root, c.p2pSeq}] = &c;
      } else {
        colls.push_back(&c);
      }
    }
  }

  const FrCall* coll(int64_t collSeq) const {
    auto it = std::lower_bound(colls.begin(), colls.end(), collSeq,
                               [](const FrCall* c, int64_t s) { return c->collSeq < s; });
    return it != colls.end() && (*it)->collSeq == collSeq ? *it : nullptr;
  }
};

RankInColl rankInColl(const RankIndex& ri, int64_t collSeq) {
  RankInColl x;
  x.rank = ri.dump->header.rank;
  x.truncated = ri.dump->truncated();
  if (const FrCall* c = ri.coll(collSeq)) {
    x.presence = Presence::Entered;
    x.call = *c;
    return x;
  }
  // The ring holds the newest calls: past its newest collective (or with no
  // collective in a ring that kept every call) the rank never got there.
  const bool newer = ri.colls.empty() ? !x.truncated : collSeq > ri.colls.back()->collSeq;
  if (newer) {
    x.presence = Presence::NeverEntered;
    if (!ri.colls.empty()) x.newestColl = *ri.colls.back();
    if (!ri.dump->calls.empty()) x.newestCall = ri.dump->calls.back();
    return x;
  }
  x.presence = Presence::Unknown;
  if (!ri.colls.empty()) x.oldestColl = *ri.colls.front();
  return x;
}

// The first coll_seq some rank that dumped did not complete: its first
// entry not completed, or the first coll_seq anyone has past its newest.
std::optional<int64_t> firstNotCompleted(const std::vector<RankIndex>& ranks) {
  std::vector<int64_t> all;
  for (const RankIndex& ri : ranks)
    for (const FrCall* c : ri.colls) all.push_back(c->collSeq);
  std::sort(all.begin(), all.end());
  all.erase(std::unique(all.begin(), all.end()), all.end());
  std::optional<int64_t> first;
  const auto consider = [&](int64_t s) { first = first ? std::min(*first, s) : s; };
  for (const RankIndex& ri : ranks) {
    for (const FrCall* c : ri.colls) {
      if (c->state != FrState::Completed) {
        consider(c->collSeq);
        break;
      }
    }
    if (!ri.colls.empty()) {
      auto above = std::upper_bound(all.begin(), all.end(), ri.colls.back()->collSeq);
      if (above != all.end()) consider(*above);
    } else if (!ri.dump->truncated() && !all.empty()) {
      consider(all.front());
    }
  }
  return first;
}

std::vector<CollMismatch> mismatches(const std::vector<RankIndex>& ranks) {
  struct Entry {
    int64_t collSeq;
    int rank;
    const FrCall* call;
  };
  std::vector<Entry> entries;
  for (const RankIndex& ri : ranks)
    for (const FrCall* c : ri.colls) entries.push_back({c->collSeq, ri.dump->header.rank, c});
  std::sort(entries.begin(), entries.end(),
            [](const Entry& a, const Entry& b) { return std::tie(a.collSeq, a.rank) < std::tie(b.collSeq, b.rank); });

  using Getter = std::string (*)(const FrCall&);
  const std::pair<const char*, Getter> fields[] = {
      {"op", [](const FrCall& c) { return std::string(frOpName(c.op)); }},
      {"count", [](const FrCall& c) { return std::to_string(c.count); }},
      {"dtype", [](const FrCall& c) { return c.dtype; }},
      {"redop", [](const FrCall& c) { return c.redop; }},
      {"root", [](const FrCall& c) { return std::to_string(c.root); }},
  };
  std::vector<CollMismatch> out;
  for (size_t begin = 0; begin < entries.size();) {
    size_t end = begin;
    while (end < entries.size() && entries[end].collSeq == entries[begin].collSeq) ++end;
    if (end - begin >= 2) {
      CollMismatch m;
      m.collSeq = entries[begin].collSeq;
      m.op = entries[begin].call->op;
      for (const auto& [name, get] : fields) {
        ArgDiff d;
        d.field = name;
        std::map<std::string, size_t> slot;
        for (size_t i = begin; i < end; ++i) {
          const std::string v = get(*entries[i].call);
          auto [it, fresh] = slot.try_emplace(v, d.values.size());
          if (fresh) d.values.push_back({v, {}});
          d.values[it->second].second.push_back(entries[i].rank);
        }
        if (d.values.size() > 1) m.diffs.push_back(std::move(d));
      }
      if (!m.diffs.empty()) out.push_back(std::move(m));
    }
    begin = end;
  }
  return out;
}

// Where rank `rank`'s send to (recv from) `peer` number `k` stands.
P2pSide p2pSide(const RankIndex* ri, bool send, int peer, int64_t k, std::optional<FrCall>* call) {
  if (!ri) return P2pSide::NoDump;
  const auto lo = ri->p2p.lower_bound({send, peer, k});
  if (lo != ri->p2p.end() && lo->first == std::tuple{send, peer, k}) {
    *call = *lo->second;
    return P2pSide::Posted;
  }
  const bool laterOne = lo != ri->p2p.end() && std::get<0>(lo->first) == send && std::get<1>(lo->first) == peer;
  if (laterOne) return P2pSide::Unknown;  // k came before the ring's oldest
  const bool earlierOne = lo != ri->p2p.begin() && std::get<0>(std::prev(lo)->first) == send &&
                          std::get<1>(std::prev(lo)->first) == peer;
  if (earlierOne || !ri->dump->truncated()) return P2pSide::NeverPosted;
  return P2pSide::Unknown;
}

std::vector<P2pPair> p2pPairs(const std::vector<RankIndex>& ranks, int nranks) {
  std::vector<const RankIndex*> byRank(static_cast<size_t>(nranks), nullptr);
  std::set<std::tuple<int, int, int64_t>> keys;  // (sender, receiver, p2p_seq)
  for (const RankIndex& ri : ranks) {
    const int me = ri.dump->header.rank;
    byRank[static_cast<size_t>(me)] = &ri;
    for (const auto& [key, c] : ri.p2p) {
      if (c->state == FrState::Completed) continue;
      const bool send = std::get<0>(key);
      keys.insert({send ? me : c->root, send ? c->root : me, c->p2pSeq});
    }
  }
  std::vector<P2pPair> out;
  for (const auto& [sender, receiver, k] : keys) {
    P2pPair p;
    p.sender = sender;
    p.receiver = receiver;
    p.p2pSeq = k;
    p.sendSide = p2pSide(byRank[static_cast<size_t>(sender)], true, receiver, k, &p.send);
    p.recvSide = p2pSide(byRank[static_cast<size_t>(receiver)], false, sender, k, &p.recv);
    if (p.send && p.recv) {
      if (p.send->count != p.recv->count) p.differ.push_back("count");
      if (p.send->dtype != p.recv->dtype) p.differ.push_back("dtype");
    }
    out.push_back(std::move(p));
  }
  return out;
}

}  // namespace

std::vector<int> StuckColl::waiting() const {
  std::vector<int> out;
  for (const RankInColl& r : ranks)
    if (r.presence == Presence::Entered && r.call->state != FrState::Completed) out.push_back(r.rank);
  return out;
}

std::vector<int> StuckColl::neverEntered() const {
  std::vector<int> out;
  for (const RankInColl& r : ranks)
    if (r.presence == Presence::NeverEntered) out.push_back(r.rank);
  return out;
}

CommReport analyzeComm(const CommDumps& in) {
  CommReport r;
  r.comm = in.comm;
  r.unreadable = in.unreadable;
  for (const FrDump& d : in.dumps) {
    RankDump rd;
    rd.header = d.header;
    rd.held = d.calls.size();
    if (!d.calls.empty()) {
      rd.firstSeq = d.calls.front().seq;
      rd.lastSeq = d.calls.back().seq;
    }
    rd.truncated = d.truncated();
    r.dumps.push_back(std::move(rd));
    r.nranks = std::max(r.nranks, d.header.nranks);
  }
  for (const RankDump& d : r.dumps)
    if (d.header.nranks != r.nranks)
      r.problems.push_back(
          fmt::format("rank {}'s header says nranks {}, another's {}", d.header.rank, d.header.nranks, r.nranks));
  std::vector<bool> present(static_cast<size_t>(r.nranks), false);
  for (const RankDump& d : r.dumps) present[static_cast<size_t>(d.header.rank)] = true;
  for (const UnreadableDump& u : in.unreadable)
    if (u.rank < r.nranks) present[static_cast<size_t>(u.rank)] = true;
  for (int i = 0; i < r.nranks; ++i)
    if (!present[static_cast<size_t>(i)]) r.missing.push_back(i);

  std::vector<RankIndex> ranks;
  ranks.reserve(in.dumps.size());
  for (const FrDump& d : in.dumps) ranks.emplace_back(d);
  if (auto first = firstNotCompleted(ranks)) {
    StuckColl s;
    s.collSeq = *first;
    for (const RankIndex& ri : ranks) s.ranks.push_back(rankInColl(ri, *first));
    for (const RankInColl& x : s.ranks) {
      if (x.presence == Presence::Entered) {
        s.op = x.call->op;
        break;
      }
    }
    r.stuck = std::move(s);
  }
  r.mismatches = mismatches(ranks);
  r.p2p = p2pPairs(ranks, r.nranks);
  r.verdict = verdictOf(r);
  return r;
}

}  // namespace coll::trace
