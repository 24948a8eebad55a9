#include "fr_render.h"

#include <fmt/format.h>

#include "fr_words.h"
#include "json_line.h"

namespace coll::trace {

namespace {

const FrHeader* headerOf(const CommReport& r, int rank) {
  for (const RankDump& d : r.dumps)
    if (d.header.rank == rank) return &d.header;
  return nullptr;
}

std::string ringText(const RankDump& d) {
  if (d.held == 0) return fmt::format("its ring is empty ({} calls recorded)", d.header.recorded);
  return fmt::format("its ring holds seq {}-{} of {} calls recorded{}", d.firstSeq, d.lastSeq, d.header.recorded,
                     d.truncated ? " (older ones overwritten)" : "");
}

// "started 30 s before the dump: "waiting for rank 2 ..."", "started 2.0 s
// before the dump, waits on rank 2 at step 0/6", "failed after 30 s: "...";
// error: "..."".
std::string standing(const FrCall& c, const FrHeader* h) {
  std::string out = frStateName(c.state);
  const int64_t since = c.state == FrState::Enqueued ? c.tEnqueueNs : c.tStartNs;
  if (c.state == FrState::Failed && c.tStartNs > 0 && c.tEndNs >= c.tStartNs) {
    out += " after " + duration(c.tEndNs - c.tStartNs);
  } else if (c.state != FrState::Completed && c.state != FrState::Failed && since > 0 && h && h->timeNs >= since) {
    out += fmt::format(" {} before the dump", duration(h->timeNs - since));
  }
  if (c.state == FrState::Completed) return out;
  // wait_what says all the wait fields do, in words, when the writer has it.
  if (!c.waitWhat.empty()) {
    out += ": " + jsonQuote(printable(c.waitWhat));
  } else {
    if (c.waitPeer >= 0) out += fmt::format(", waits on rank {}", c.waitPeer);
    if (c.nsteps > 0) out += fmt::format(" at step {}/{}", c.waitStep, c.nsteps);
  }
  if (!c.error.empty()) out += "; error: " + jsonQuote(printable(c.error));
  return out;
}

void renderRanks(const CommReport& r, std::string* out) {
  for (const RankDump& d : r.dumps) {
    const FrHeader& h = d.header;
    *out += fmt::format("rank {}: {} pid {}, dumped on {}{}; {}\n", h.rank, printable(h.host), h.pid,
                        printable(h.reason), h.message.empty() ? "" : ": " + jsonQuote(printable(h.message)),
                        ringText(d));
  }
  if (!r.missing.empty())
    *out += fmt::format("{} no dump: killed, or {} never got to dump\n", ranksDo(r.missing, "wrote", "wrote"),
                        r.missing.size() == 1 ? "it" : "they");
  for (const UnreadableDump& u : r.unreadable)
    *out += fmt::format("rank {}'s dump is unreadable: {}\n", u.rank, printable(u.error));
  for (const std::string& p : r.problems) *out += "problem: " + p + "\n";
}

void renderStuck(const CommReport& r, std::string* out) {
  if (!r.stuck) {
    *out += "first collective not completed: none (every collective in the dumps completed)\n";
    return;
  }
  const StuckColl& s = *r.stuck;
  std::string args;
  for (const RankInColl& x : s.ranks) {
    if (x.presence == Presence::Entered) {
      args = " (" + callArgs(*x.call) + ")";
      break;
    }
  }
  *out += fmt::format("first collective not completed by every rank that dumped: {}{}\n", collName(s.op, s.collSeq),
                      args);
  for (const RankInColl& x : s.ranks) {
    const FrHeader* h = headerOf(r, x.rank);
    switch (x.presence) {
      case Presence::Entered:
        *out += fmt::format("  rank {}: {}\n", x.rank, standing(*x.call, h));
        break;
      case Presence::NeverEntered: {
        std::string line = fmt::format("  rank {}: never entered it", x.rank);
        if (x.newestColl) {
          line += fmt::format("; its newest collective: {} ({})", collName(x.newestColl->op, x.newestColl->collSeq),
                              frStateName(x.newestColl->state));
        } else {
          line += "; no collective in its ring";
        }
        if (x.newestCall && !(x.newestColl && x.newestCall->seq == x.newestColl->seq))
          line += fmt::format("; its newest call: seq {} {} ({})", x.newestCall->seq, callName(*x.newestCall),
                              standing(*x.newestCall, h));
        *out += line + "\n";
        break;
      }
      case Presence::Unknown:
        if (x.oldestColl && x.oldestColl->collSeq > s.collSeq && x.truncated) {
          *out += fmt::format("  rank {}: unknown: its ring starts later, at {} (older calls overwritten)\n", x.rank,
                              collName(x.oldestColl->op, x.oldestColl->collSeq));
        } else if (x.oldestColl) {
          *out += fmt::format("  rank {}: unknown: coll_seq {} is missing from its ring\n", x.rank, s.collSeq);
        } else {
          *out += fmt::format("  rank {}: unknown: no collective in its ring, which overwrote older calls\n", x.rank);
        }
        break;
    }
  }
}

void renderMismatches(const CommReport& r, std::string* out) {
  if (r.mismatches.empty()) {
    *out += "mismatched arguments: none\n";
    return;
  }
  *out += fmt::format("mismatched arguments ({} coll_seq{}):\n", r.mismatches.size(),
                      r.mismatches.size() == 1 ? "" : "s");
  for (size_t i = 0; i < r.mismatches.size() && i < kRenderListLines; ++i) {
    *out += fmt::format("  {}: {}\n", mismatchName(r.mismatches[i]), mismatchText(r.mismatches[i]));
  }
  if (r.mismatches.size() > kRenderListLines)
    *out += fmt::format("  ... and {} more\n", r.mismatches.size() - kRenderListLines);
}

std::string sideText(const P2pPair& p, bool send, const CommReport& r) {
  const int rank = send ? p.sender : p.receiver;
  const char* name = send ? "send" : "recv";
  switch (send ? p.sendSide : p.recvSide) {
    case P2pSide::Posted: {
      const FrCall& c = send ? *p.send : *p.recv;
      return fmt::format("rank {}'s {} ({}) is {}", rank, name, callArgs(c), standing(c, headerOf(r, rank)));
    }
    case P2pSide::NeverPosted: return fmt::format("rank {} never posted the {}", rank, name);
    case P2pSide::Unknown: return fmt::format("rank {}'s ring no longer reaches back to the {}", rank, name);
    case P2pSide::NoDump: return fmt::format("rank {} left no readable dump", rank);
  }
  return "";
}

void renderP2p(const CommReport& r, std::string* out) {
  if (r.p2p.empty()) {
    *out += "send/recv not completed: none\n";
    return;
  }
  *out += fmt::format("send/recv not completed ({}):\n", r.p2p.size());
  for (size_t i = 0; i < r.p2p.size() && i < kRenderListLines; ++i) {
    const P2pPair& p = r.p2p[i];
    *out += fmt::format("  #{} from rank {} to rank {}: {}; {}{}\n", p.p2pSeq, p.sender, p.receiver,
                        sideText(p, true, r), sideText(p, false, r),
                        p.differ.empty() ? "" : "; they differ in " + fmt::format("{}", fmt::join(p.differ, ", ")));
  }
  if (r.p2p.size() > kRenderListLines) *out += fmt::format("  ... and {} more\n", r.p2p.size() - kRenderListLines);
}

}  // namespace

std::string renderReport(const CommReport& r) {
  std::vector<int> dumped;
  for (const RankDump& d : r.dumps) dumped.push_back(d.header.rank);
  std::string out = fmt::format("== communicator {}: {} ranks, dumps from {}\n", r.comm, r.nranks,
                                dumped.empty() ? "no rank" : rankList(dumped));
  renderRanks(r, &out);
  if (!r.dumps.empty()) {
    renderStuck(r, &out);
    renderMismatches(r, &out);
    renderP2p(r, &out);
  }
  out += "verdict: " + r.verdict + "\n";
  return out;
}

}  // namespace coll::trace
