// host_runner_diagnostics.cc — the Runner's slow path: abort and peer
// checks, where a stream waits, and the timeout report with its wait graph
// (host_runner.h).
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <thread>

#include "executor/board_collectives.h"
#include "executor/host_runner.h"
#include "coll/base/clock.h"

namespace coll::exec::detail {

std::string Runner::where(const Stream& st) const {
  const HostOp& op = ops_()[st.op];
  if (st.checkPhase < 2) {
    int n = op.comm->nranks, r = op.comm->rank;
    return st.checkPhase == 0
               ? fmt::format("waiting for rank {} to drain its queue in {} (COLL_CHECK signature)", (r + 1) % n,
                             describe(op.sig))
               : fmt::format("waiting for rank {} in {} (COLL_CHECK signature)", (r - 1 + n) % n, describe(op.sig));
  }
  const Step& s = op.schedule->channels[st.channel].steps[st.next];
  std::string peer;
  if (s.recvPeer >= 0) {
    size_t bytes;
    bool has = op.comm->transport->recvConn(st.channel, s.recvPeer)->tryPeek(&bytes) != nullptr;
    if (!has) peer = fmt::format("waiting for rank {}", s.recvPeer);
  }
  if (peer.empty() && s.sendPeer >= 0 && op.comm->transport->sendConn(st.channel, s.sendPeer)->tryAcquire() == nullptr)
    peer = fmt::format("waiting for rank {} to drain its queue", s.sendPeer);
  if (peer.empty()) peer = grouped_ ? "waiting for an earlier operation of the group in" : "at";
  else peer += " in";
  return fmt::format("{} {} step {}/{} ({} {}, channel {})", peer, describe(op.sig), st.next + 1, st.nsteps,
                     sched::algoName(op.sig.algo), sched::stepKindName(s.kind), st.channel);
}

int Runner::waitedPeer(const Stream& st) const {
  const HostOp& op = ops_()[st.op];
  if (st.checkPhase < 2) {
    int n = op.comm->nranks, r = op.comm->rank;
    return st.checkPhase == 0 ? (r + 1) % n : (r - 1 + n) % n;
  }
  if (st.next >= st.nsteps) return -1;
  const Step& s = op.schedule->channels[st.channel].steps[st.next];
  size_t bytes;
  if (s.recvPeer >= 0 && op.comm->transport->recvConn(st.channel, s.recvPeer)->tryPeek(&bytes) == nullptr)
    return s.recvPeer;
  if (s.sendPeer >= 0 && op.comm->transport->sendConn(st.channel, s.sendPeer)->tryAcquire() == nullptr)
    return s.sendPeer;
  return -1;
}

void Runner::recordWaits() {
  for (uint32_t o = 0; o < ops_().size(); ++o) {
    const HostOp& op = ops_()[o];
    if (op.recorder == nullptr) continue;
    for (const Stream& st : streams_)
      if (st.op == o && (st.next < st.nsteps || st.checkPhase < 2)) {
        op.recorder->setWait(op.frHandle, waitedPeer(st), st.next + 1, st.nsteps, where(st));
        break;
      }
  }
}

// Every rank that times out tells the others whom it waits for and listens
// a moment for their reports: a rank that is waited on and reported nothing
// is stuck outside the collective (or slow), and every survivor's message
// names it, whichever failure notice reaches it first.
std::string Runner::waitGraph(const CommView* c, int waitingFor, int64_t timeoutMs) {
  transport::Transport* tp = c->transport;
  if (tp == nullptr) return "";
  tp->reportWait(waitingFor);
  std::vector<int> byRank(c->nranks, transport::Transport::kNoWaitReport);
  const int64_t graceMs = std::clamp<int64_t>(timeoutMs / 2, 1, 1000);
  const int64_t until = nowNs() + graceMs * 1'000'000;
  for (;;) {
    tp->waitReports(byRank);
    byRank[c->rank] = waitingFor;
    int reported = 0;
    for (int w : byRank) reported += w != transport::Transport::kNoWaitReport ? 1 : 0;
    if (reported == c->nranks || nowNs() >= until) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  std::string edges, silent;
  std::vector<char> waitedOn(c->nranks, 0);
  for (int r = 0; r < c->nranks; ++r) {
    if (byRank[r] == transport::Transport::kNoWaitReport) continue;
    edges += fmt::format(" {}->{}", r, byRank[r] >= 0 ? std::to_string(byRank[r]) : std::string("?"));
    if (byRank[r] >= 0 && byRank[r] < c->nranks) waitedOn[byRank[r]] = 1;
  }
  for (int r = 0; r < c->nranks; ++r)
    if (waitedOn[r] && byRank[r] == transport::Transport::kNoWaitReport) silent += fmt::format(" {}", r);
  if (silent.empty()) return fmt::format("; waits (rank->rank it waits for):{}", edges);
  return fmt::format("; stuck: rank(s){} (waited on, in no wait of their own); waits:{}", silent, edges);
}

Status Runner::timeoutError(int64_t idleMs, int64_t timeoutMs) {
  for (const Stream& st : streams_)
    if (st.next < st.nsteps || st.checkPhase < 2) {
      const HostOp& op = ops_()[st.op];
      std::string at = where(st);
      // Reduce ranks that disagree on the root (each naming itself, say)
      // may all wait to receive, so no header ever shows the mismatch; only
      // COLL_CHECK's signature ring, which costs every call a hop, sees it.
      const char* hint = op.sig.coll == sched::CollKind::Reduce && !op.checkRing
                             ? " (ranks that disagree on a reduce's root can all wait to receive: COLL_CHECK=1 "
                               "compares the calls first)"
                             : "";
      return makeError(collTimeout, "rank {} timed out after {} ms without progress (COLL_TIMEOUT), {}{}{}",
                       op.comm->rank, idleMs, at, hint, waitGraph(op.comm, waitedPeer(st), timeoutMs));
    }
  return makeError(collTimeout,
                   "rank {} timed out after {} ms handing its last messages to the network: a peer stopped reading "
                   "(COLL_TIMEOUT)",
                   comms_.empty() ? -1 : comms_[0]->rank, idleMs);
}

// True if the stream cannot move because of `peer`: its next step waits for
// a message from it that is not there, or for room in its full queue.
bool Runner::blockedOn(const Stream& st, int peer) const {
  const HostOp& op = ops_()[st.op];
  transport::Transport* tp = op.comm->transport;
  int recvPeer = -1, sendPeer = -1;
  uint32_t ch = st.channel;
  if (st.checkPhase < 2) {
    int n = op.comm->nranks, r = op.comm->rank;
    (st.checkPhase == 0 ? sendPeer : recvPeer) = st.checkPhase == 0 ? (r + 1) % n : (r - 1 + n) % n;
    ch = 0;
  } else if (st.next < st.nsteps) {
    const Step& s = op.schedule->channels[st.channel].steps[st.next];
    recvPeer = s.recvPeer;
    sendPeer = s.sendPeer;
  }
  size_t bytes;
  if (recvPeer == peer && tp->recvConn(ch, peer)->tryPeek(&bytes) == nullptr) return true;
  if (sendPeer == peer && tp->sendConn(ch, peer)->tryAcquire() == nullptr) return true;
  return false;
}

Status Runner::slowChecks(int64_t) {
  for (const CommView* c : comms_) {
    if (c->aborted && c->aborted->load(std::memory_order_relaxed))
      return makeError(collAborted, "rank {}: communicator aborted (collCommAbort)", c->rank);
    if (c->transport) {
      Status s = c->transport->checkPeers();
      if (!s.isOk()) {
        for (const Stream& st : streams_)
          if ((st.next < st.nsteps || st.checkPhase < 2) && ops_()[st.op].comm == c)
            return makeError(s.code(), "rank {}: {} while {}", c->rank, s.message(), where(st));
        return makeError(s.code(), "rank {}: {}", c->rank, s.message());
      }
      // A dead peer matters only if we still wait on it: one that finished
      // its part and exited is normal at the end of a job.
      for (int dead : c->transport->deadPeers())
        for (const Stream& st : streams_)
          if ((st.next < st.nsteps || st.checkPhase < 2) && ops_()[st.op].comm == c && blockedOn(st, dead)) {
            // A peer that failed knowingly sends its notice and may exit at
            // once: if the notice landed since the check above, its cause is
            // the one to report, not a death.
            Status notice = c->transport->checkPeers();
            if (!notice.isOk())
              return makeError(notice.code(), "rank {}: {} while {}", c->rank, notice.message(), where(st));
            return makeError(collRemoteError, "rank {}: rank {} died (its process is gone) while {}", c->rank, dead,
                             where(st));
          }
      // A peer that took the board for this call waits there for us.
      for (const Stream& st : streams_)
        if ((st.next < st.nsteps || st.checkPhase < 2) && ops_()[st.op].comm == c)
          if (Status m = boardPathMismatch(*c, ops_()[st.op].sig); !m.isOk()) return m;
    }
  }
  return Status::ok();
}

}  // namespace coll::exec::detail
