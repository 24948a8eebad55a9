// verdictOf: the one line that says why the communicator stopped, in this
// order: arguments that differ on the first collective not completed; ranks
// that never entered it or left no dump; a collective every rank entered
// (who waits on whom); a send/recv without its other half; any other
// mismatch; else nothing found.
#include <algorithm>
#include <map>

#include <fmt/format.h>

#include "fr_analyze.h"
#include "fr_words.h"

namespace coll::trace {

namespace {

struct NoDump {
  std::vector<int> missing, unreadable;
  std::vector<int> all() const {
    std::vector<int> out = missing;
    out.insert(out.end(), unreadable.begin(), unreadable.end());
    std::sort(out.begin(), out.end());
    return out;
  }
  // "wrote no dump", or with subjects (always when both kinds are there):
  // "rank 3 wrote no dump; rank 4's dump is unreadable".
  std::string phrase(bool subjects) const {
    subjects = subjects || (!missing.empty() && !unreadable.empty());
    std::string out;
    if (!missing.empty()) out = subjects ? ranksDo(missing, "wrote no dump", "wrote no dump") : "wrote no dump";
    if (!unreadable.empty()) {
      const std::string u = subjects ? fmt::format("{}'s dump is unreadable", rankList(unreadable))
                                     : unreadable.size() == 1 ? "its dump is unreadable" : "their dumps are unreadable";
      out += (out.empty() ? "" : "; ") + u;
    }
    return out;
  }
};

std::string stuckVerdict(const StuckColl& s, const NoDump& nodump) {
  const std::string what = collName(s.op, s.collSeq);
  const std::vector<int> never = s.neverEntered();
  const std::vector<int> waiting = s.waiting();
  const std::vector<int> gone = nodump.all();
  if (!never.empty() || !gone.empty()) {
    std::vector<int> culprits = never;
    culprits.insert(culprits.end(), gone.begin(), gone.end());
    std::sort(culprits.begin(), culprits.end());
    std::string why;
    if (gone.empty()) {
      why = "never entered " + what;
    } else if (never.empty()) {
      why = nodump.phrase(false);
    } else {
      why = fmt::format("{} {}; {}", rankList(never), "never entered " + what, nodump.phrase(true));
    }
    // (With no rank that never entered it, some rank entered and waits.)
    if (!waiting.empty()) why += "; " + ranksDo(waiting, "waits on it", "wait on it") + (never.empty() ? " in " + what : "");
    return fmt::format("stuck: {} ({})", rankList(culprits), why);
  }
  // Every rank that dumped entered it (or its ring no longer tells): say
  // who waits on whom.
  std::map<int, std::vector<int>> byPeer;
  std::vector<int> entered, unknown;
  for (const RankInColl& x : s.ranks) {
    (x.presence == Presence::Entered ? entered : unknown).push_back(x.rank);
    if (x.presence == Presence::Entered && x.call->state != FrState::Completed) byPeer[x.call->waitPeer].push_back(x.rank);
  }
  std::string waits;
  for (const auto& [peer, ranks] : byPeer) {
    const std::string on = peer < 0 ? "on no rank it names" : fmt::format("on rank {}", peer);
    waits += fmt::format("{}{} {}", waits.empty() ? "" : "; ", ranksDo(ranks, "waits", "wait"), on);
  }
  if (unknown.empty()) return fmt::format("stuck: inside {}, which every rank that dumped entered ({})", what, waits);
  return fmt::format("stuck: inside {}, entered by {}, unknown on {} ({})", what, rankList(entered), rankList(unknown),
                     waits);
}

std::string p2pVerdict(const P2pPair& p, const NoDump& nodump) {
  const std::string sendName = fmt::format("send #{} to rank {}", p.p2pSeq, p.receiver);
  const std::string recvName = fmt::format("recv #{} from rank {}", p.p2pSeq, p.sender);
  if (!p.differ.empty()) {
    std::string what;
    for (const std::string& f : p.differ) {
      const std::string a = f == "count" ? std::to_string(p.send->count) : printable(p.send->dtype);
      const std::string b = f == "count" ? std::to_string(p.recv->count) : printable(p.recv->dtype);
      what += fmt::format("{}{} differs (send {}, recv {})", what.empty() ? "" : ", ", f, a, b);
    }
    return fmt::format("mismatch: rank {}'s {} and rank {}'s {}: {}", p.sender, sendName, p.receiver, recvName, what);
  }
  // The side that is missing, and the side that waits for it.
  for (const bool sendMissing : {false, true}) {
    const P2pSide missing = sendMissing ? p.sendSide : p.recvSide;
    const P2pSide other = sendMissing ? p.recvSide : p.sendSide;
    if ((missing != P2pSide::NeverPosted && missing != P2pSide::NoDump) || other != P2pSide::Posted) continue;
    const int culprit = sendMissing ? p.sender : p.receiver;
    const int waiter = sendMissing ? p.receiver : p.sender;
    const bool unreadable =
        std::find(nodump.unreadable.begin(), nodump.unreadable.end(), culprit) != nodump.unreadable.end();
    const std::string why = missing != P2pSide::NoDump ? fmt::format("never posted {}", sendMissing ? sendName : recvName)
                            : unreadable              ? "its dump is unreadable"
                                                      : "wrote no dump";
    return fmt::format("stuck: rank {} ({}; rank {}'s {} waits on it)", culprit, why, waiter,
                       sendMissing ? recvName : sendName);
  }
  const auto state = [](const std::optional<FrCall>& c) { return c ? frStateName(c->state) : "unknown"; };
  return fmt::format("stuck: send #{} from rank {} to rank {} (the send {}, the recv {})", p.p2pSeq, p.sender,
                     p.receiver, state(p.send), state(p.recv));
}

}  // namespace

std::string verdictOf(const CommReport& r) {
  if (r.dumps.empty()) return "unknown: no dump of this communicator could be read";
  NoDump nodump;
  nodump.missing = r.missing;
  for (const UnreadableDump& u : r.unreadable) nodump.unreadable.push_back(u.rank);
  if (r.stuck) {
    for (const CollMismatch& m : r.mismatches)
      if (m.collSeq == r.stuck->collSeq) return fmt::format("mismatch: {}: {}", mismatchName(m), mismatchText(m));
    return stuckVerdict(*r.stuck, nodump);
  }
  // A pair with one side missing explains a hang better than one with both posted.
  const P2pPair* pick = nullptr;
  for (const P2pPair& p : r.p2p)
    if (!pick && (!p.differ.empty() || p.sendSide == P2pSide::NeverPosted || p.recvSide == P2pSide::NeverPosted)) pick = &p;
  for (const P2pPair& p : r.p2p)
    if (!pick && (p.sendSide == P2pSide::NoDump || p.recvSide == P2pSide::NoDump)) pick = &p;
  if (!pick && !r.p2p.empty()) pick = &r.p2p.front();
  if (pick) return p2pVerdict(*pick, nodump);
  if (!r.mismatches.empty())
    return fmt::format("mismatch: {}: {}", mismatchName(r.mismatches.front()), mismatchText(r.mismatches.front()));
  if (!nodump.all().empty())
    return fmt::format("no hang in the dumps: every call they hold completed; {}", nodump.phrase(true));
  return "ok: every call in the dumps completed";
}

}  // namespace coll::trace
