#include "executor/host_executor.h"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <thread>

#include "util/backoff.h"
#include "util/clock.h"
#include "util/log.h"

namespace coll::exec {
namespace {

using sched::Buf;
using sched::Step;
using sched::StepKind;
using transport::kSlotHeaderBytes;

// Where a stream stands.  checkPhase: 0 send signature, 1 receive it, 2 done.
struct Stream {
  uint32_t op;
  uint32_t channel;
  uint32_t next = 0;
  uint32_t nsteps;
  int checkPhase = 2;
};

enum class Try { Done, NotReady, Failed };

// Reused per thread: a call allocates nothing once the vectors have grown
// (small-message latency is a few hundred nanoseconds; malloc would show).
class Runner {
 public:
  Status run(std::vector<HostOp>& ops);

 private:
  Try tryStep(Stream& st, const Step& s);
  Try tryCheck(Stream& st);
  Status verify(const HostOp& op, const MsgHeader& h, int from, size_t bytes, const Step* s, uint32_t index);
  Status slowChecks(int64_t now);
  Status timeoutError(int64_t idleMs, int64_t timeoutMs);
  int waitedPeer(const Stream& st) const;
  std::string waitGraph(const CommView* c, int waitingFor, int64_t timeoutMs);
  std::string where(const Stream& st) const;
  bool blockedOn(const Stream& st, int peer) const;

  // Group ordering of links.
  size_t linkId(uint32_t op, uint32_t ch, int peer, int dir) const;
  bool owns(uint32_t op, uint32_t ch, int peer, int dir) const;
  void consumed(uint32_t op, uint32_t ch, int peer, int dir);
  void setupLinks();

  const char* srcPtr(const HostOp& op, const Step& s) const {
    return (s.src == Buf::Input ? op.input : op.output) + s.srcOff * op.elemSize;
  }
  char* dstPtr(const HostOp& op, const Step& s) const { return op.output + s.dstOff * op.elemSize; }
  // a op pre(b) -> dst, or plain copy for non-reducing collectives.
  void combine(const HostOp& op, const Step& s, void* dst, const void* a, const void* b, size_t n) const {
    if (op.reduces) {
      const bool pre = s.src == Buf::Input && op.fn.premul;
      const bool post = s.final && op.fn.divisor > 1;
      // One rank, in place: without a scalar or a divisor other than 1 the
      // pass would rewrite every element with itself (a 23 MB gradient
      // all-reduce at N = 1 spent 0.9 ms doing that).
      if (a == nullptr && dst == b && !pre && !post) return;
      kernels::reduce(op.fn, dst, a, b, n, pre, s.final);
    } else if (dst != b) {
      memcpy(dst, b, n * op.elemSize);
    }
  }

  std::vector<HostOp>* opsPtr_ = nullptr;
  std::vector<HostOp>& ops_() const { return *opsPtr_; }
  std::vector<Stream> streams_;
  Status failure_;
  // Links: comm index base + ((ch * nranks + peer) * 2 + dir).
  std::vector<const CommView*> comms_;
  std::vector<size_t> commBase_;
  std::vector<uint32_t> opComm_;
  size_t nlinks_ = 0;
  std::vector<uint32_t> pending_;  // [op * nlinks + link]
  std::vector<uint32_t> owner_;    // [link] first op still using it
  bool grouped_ = false;
};

size_t Runner::linkId(uint32_t op, uint32_t ch, int peer, int dir) const {
  const CommView* c = ops_()[op].comm;
  return commBase_[opComm_[op]] + ((static_cast<size_t>(ch) * c->nranks + peer) * 2 + dir);
}

bool Runner::owns(uint32_t op, uint32_t ch, int peer, int dir) const {
  return !grouped_ || owner_[linkId(op, ch, peer, dir)] == op;
}

void Runner::consumed(uint32_t op, uint32_t ch, int peer, int dir) {
  if (!grouped_) return;
  size_t l = linkId(op, ch, peer, dir);
  if (--pending_[op * nlinks_ + l] == 0) {
    uint32_t o = owner_[l];
    while (o < ops_().size() && pending_[o * nlinks_ + l] == 0) ++o;
    owner_[l] = o;
  }
}

void Runner::setupLinks() {
  for (const HostOp& op : ops_()) {
    auto it = std::find(comms_.begin(), comms_.end(), op.comm);
    if (it == comms_.end()) {
      commBase_.push_back(nlinks_);
      comms_.push_back(op.comm);
      size_t nch = 0;
      for (const HostOp& o : ops_())
        if (o.comm == op.comm) nch = std::max(nch, o.schedule->channels.size());
      nlinks_ += std::max<size_t>(nch, 1) * op.comm->nranks * 2;
      opComm_.push_back(static_cast<uint32_t>(comms_.size() - 1));
    } else {
      opComm_.push_back(static_cast<uint32_t>(it - comms_.begin()));
    }
  }
  grouped_ = ops_().size() > 1;
  if (!grouped_) return;
  pending_.assign(ops_().size() * nlinks_, 0);
  for (uint32_t o = 0; o < ops_().size(); ++o) {
    const HostOp& op = ops_()[o];
    if (op.checkRing && op.comm->nranks > 1) {
      int n = op.comm->nranks, r = op.comm->rank;
      ++pending_[o * nlinks_ + linkId(o, 0, (r + 1) % n, 0)];
      ++pending_[o * nlinks_ + linkId(o, 0, (r - 1 + n) % n, 1)];
    }
    for (uint32_t c = 0; c < op.schedule->channels.size(); ++c)
      for (const Step& s : op.schedule->channels[c].steps) {
        if (s.sendPeer >= 0) ++pending_[o * nlinks_ + linkId(o, c, s.sendPeer, 0)];
        if (s.recvPeer >= 0) ++pending_[o * nlinks_ + linkId(o, c, s.recvPeer, 1)];
      }
  }
  owner_.assign(nlinks_, static_cast<uint32_t>(ops_().size()));
  for (size_t l = 0; l < nlinks_; ++l)
    for (uint32_t o = 0; o < ops_().size(); ++o)
      if (pending_[o * nlinks_ + l] > 0) {
        owner_[l] = o;
        break;
      }
}

Status Runner::verify(const HostOp& op, const MsgHeader& h, int from, size_t bytes, const Step* s, uint32_t index) {
  std::string diff = compareSignatures(op.sig, op.comm->rank, h.sig, from);
  if (!diff.empty())
    return makeError(collArgMismatch, "rank {}: ranks called with different arguments: {} (rank {} called {}; rank {} called {})",
                     op.comm->rank, diff, from, describe(h.sig), op.comm->rank, describe(op.sig));
  if (h.checkOnly != (s == nullptr ? 1 : 0) || bytes != kSlotHeaderBytes + h.payloadBytes ||
      (s != nullptr && h.payloadBytes != s->count * op.elemSize))
    return makeError(collInternalError,
                     "rank {}: message from rank {} in {} has {} payload bytes at its step {}, expected {} at step {} "
                     "(schedules disagree: a libcoll bug or mixed versions)",
                     op.comm->rank, from, describe(op.sig), h.payloadBytes, h.stepIndex,
                     s ? s->count * op.elemSize : 0, index);
  return Status::ok();
}

Try Runner::tryCheck(Stream& st) {
  HostOp& op = ops_()[st.op];
  int n = op.comm->nranks, r = op.comm->rank;
  if (st.checkPhase == 0) {
    int to = (r + 1) % n;
    if (!owns(st.op, 0, to, 0)) return Try::NotReady;
    auto* sc = op.comm->transport->sendConn(0, to);
    void* slot = sc->tryAcquire();
    if (slot == nullptr) return Try::NotReady;
    auto* h = static_cast<MsgHeader*>(slot);
    h->sig = op.sig;
    h->payloadBytes = 0;
    h->stepIndex = 0;
    h->checkOnly = 1;
    sc->post(kSlotHeaderBytes);
    consumed(st.op, 0, to, 0);
    st.checkPhase = 1;
  }
  int from = (r - 1 + n) % n;
  if (!owns(st.op, 0, from, 1)) return Try::NotReady;
  auto* rc = op.comm->transport->recvConn(0, from);
  size_t bytes = 0;
  const void* msg = rc->tryPeek(&bytes);
  if (msg == nullptr) return Try::NotReady;
  Status v = verify(op, *static_cast<const MsgHeader*>(msg), from, bytes, nullptr, 0);
  if (!v.isOk()) {
    failure_ = v;
    return Try::Failed;
  }
  rc->release();
  consumed(st.op, 0, from, 1);
  st.checkPhase = 2;
  return Try::Done;
}

Try Runner::tryStep(Stream& st, const Step& s) {
  HostOp& op = ops_()[st.op];
  const uint32_t ch = st.channel;
  transport::Transport* tp = op.comm->transport;
  const size_t payload = s.count * op.elemSize;

  // Gather what the step needs; do nothing unless all of it is there.
  const void* msg = nullptr;
  transport::RecvConn* rc = nullptr;
  if (s.recvPeer >= 0) {
    if (!owns(st.op, ch, s.recvPeer, 1)) return Try::NotReady;
    rc = tp->recvConn(ch, s.recvPeer);
    size_t bytes = 0;
    msg = rc->tryPeek(&bytes);
    if (msg == nullptr) return Try::NotReady;
    Status v = verify(op, *static_cast<const MsgHeader*>(msg), s.recvPeer, bytes, &s, st.next);
    if (!v.isOk()) {
      failure_ = v;
      return Try::Failed;
    }
  }
  char* slot = nullptr;
  transport::SendConn* sc = nullptr;
  if (s.sendPeer >= 0) {
    if (!owns(st.op, ch, s.sendPeer, 0)) return Try::NotReady;
    sc = tp->sendConn(ch, s.sendPeer);
    slot = static_cast<char*>(sc->tryAcquire());
    if (slot == nullptr) return Try::NotReady;
  }
  const char* wire = msg ? static_cast<const char*>(msg) + kSlotHeaderBytes : nullptr;
  char* out = slot ? slot + kSlotHeaderBytes : nullptr;

  switch (s.kind) {
    case StepKind::Send:
      combine(op, s, out, nullptr, srcPtr(op, s), s.count);
      break;
    case StepKind::Recv:
      memcpy(dstPtr(op, s), wire, payload);
      break;
    case StepKind::RecvReduceSend:
      combine(op, s, out, wire, srcPtr(op, s), s.count);
      break;
    case StepKind::RecvReduceCopy:
      combine(op, s, dstPtr(op, s), wire, srcPtr(op, s), s.count);
      break;
    case StepKind::RecvReduceCopySend:
      // Reduce into the slot (cache-resident), then copy out once.
      combine(op, s, out, wire, srcPtr(op, s), s.count);
      memcpy(dstPtr(op, s), out, payload);
      break;
    case StepKind::RecvCopySend:
      memcpy(out, wire, payload);
      memcpy(dstPtr(op, s), wire, payload);
      break;
    case StepKind::Copy:
      combine(op, s, dstPtr(op, s), nullptr, srcPtr(op, s), s.count);
      break;
    case StepKind::LocalReduce:
      combine(op, s, dstPtr(op, s), dstPtr(op, s), srcPtr(op, s), s.count);
      break;
  }
  if (msg) {
    rc->release();
    consumed(st.op, ch, s.recvPeer, 1);
  }
  if (slot) {
    auto* h = reinterpret_cast<MsgHeader*>(slot);
    h->sig = op.sig;
    h->payloadBytes = static_cast<uint32_t>(payload);
    h->stepIndex = st.next;
    h->checkOnly = 0;
    sc->post(kSlotHeaderBytes + payload);
    consumed(st.op, ch, s.sendPeer, 0);
  }
  return Try::Done;
}

std::string Runner::where(const Stream& st) const {
  const HostOp& op = ops_()[st.op];
  if (st.checkPhase < 2) {
    int n = op.comm->nranks, r = op.comm->rank;
    return st.checkPhase == 0
               ? fmt::format("waiting to send the COLL_CHECK signature to rank {} in {}", (r + 1) % n, describe(op.sig))
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
      return makeError(collTimeout, "rank {} timed out after {} ms without progress (COLL_TIMEOUT), {}{}", op.comm->rank,
                       idleMs, at, waitGraph(op.comm, waitedPeer(st), timeoutMs));
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
    }
  }
  return Status::ok();
}

Status Runner::run(std::vector<HostOp>& ops) {
  opsPtr_ = &ops;
  streams_.clear();
  failure_ = Status::ok();
  comms_.clear();
  commBase_.clear();
  opComm_.clear();
  nlinks_ = 0;
  setupLinks();
  uint32_t spin = UINT32_MAX, yields = UINT32_MAX;
  int64_t timeoutMs = INT64_MAX;
  for (const HostOp& op : ops_()) {
    spin = std::min(spin, op.comm->spinBudget);
    yields = std::min(yields, op.comm->yieldBudget);
    if (op.comm->timeoutMs > 0) timeoutMs = std::min(timeoutMs, op.comm->timeoutMs);
  }
  for (uint32_t o = 0; o < ops_().size(); ++o) {
    const auto& chans = ops_()[o].schedule->channels;
    bool check = ops_()[o].checkRing && ops_()[o].comm->nranks > 1;
    for (uint32_t c = 0; c < chans.size(); ++c) {
      Stream st{o, c, 0, static_cast<uint32_t>(chans[c].steps.size())};
      if (check && c == 0) st.checkPhase = 0;
      if (st.nsteps > 0 || st.checkPhase < 2) streams_.push_back(st);
    }
    if (check && chans.empty()) streams_.push_back(Stream{o, 0, 0, 0, 0});
  }
  size_t remaining = streams_.size();
  Backoff backoff(spin, yields);
  // Sleeping on the doorbell needs one transport that every wake-up comes
  // through; a group over several communicators naps instead.
  transport::Transport* bell = comms_.size() == 1 ? comms_[0]->transport : nullptr;
  bool armed = false;  // announced sleep; one more pass before sleeping
  uint32_t token = 0;
  int64_t lastProgress = nowNs();
  bool progressedSinceCheck = false;
  // Done when every step ran and every message left this process (a socket
  // transport may still hold the last ones in its buffers).
  auto flushing = [this] {
    for (const CommView* c : comms_)
      if (c->transport && c->transport->sendsInFlight()) return true;
    return false;
  };
  while (remaining > 0 || flushing()) {
    bool progressed = false;
    for (Stream& st : streams_) {
      if (st.next == st.nsteps && st.checkPhase == 2) continue;
      if (st.checkPhase < 2) {
        Try t = tryCheck(st);
        if (t == Try::Failed) break;
        if (t == Try::NotReady) continue;
        progressed = true;
      }
      if (st.nsteps > 0) {
        const auto& steps = ops_()[st.op].schedule->channels[st.channel].steps;
        while (st.next < st.nsteps) {
          Try t = tryStep(st, steps[st.next]);
          if (t != Try::Done) break;
          ++st.next;
          progressed = true;
        }
      }
      if (!failure_.isOk()) break;
      if (st.next == st.nsteps) --remaining;
    }
    if (!failure_.isOk()) break;
    if (progressed) {
      if (armed) bell->cancelSleep();
      armed = false;
      backoff.reset();
      progressedSinceCheck = true;
      continue;
    }
    if (armed) {
      // Announced, polled once more, still nothing: sleep until a peer
      // posts or frees a slot for us (or 20 ms pass, for the slow checks).
      bell->sleep(token, 20'000'000);
      armed = false;
    } else if (bell != nullptr && backoff.exhausted()) {
      token = bell->prepareToSleep();
      armed = true;
      continue;
    } else if (!backoff.pause()) {
      continue;
    }
    int64_t now = nowNs();
    if (progressedSinceCheck) {
      lastProgress = now;
      progressedSinceCheck = false;
    }
    failure_ = slowChecks(now);
    if (!failure_.isOk()) break;
    int64_t idleMs = (now - lastProgress) / 1000000;
    if (idleMs >= timeoutMs) {
      failure_ = timeoutError(idleMs, timeoutMs);
      break;
    }
  }
  if (armed) bell->cancelSleep();
  if (!failure_.isOk()) {
    // Tell every peer, so they stop waiting for us now rather than at their
    // own deadline, and learn the first cause (a peer keeps only the first
    // notice it gets, so notices cannot bounce around).
    for (const CommView* c : comms_)
      if (c->transport) c->transport->notifyPeers(failure_.message());
    COLL_LOG(Warn, kExec, comms_.empty() ? -1 : comms_[0]->rank, "{}", failure_.message());
  }
  return failure_;
}

}  // namespace

Status runHostOps(std::vector<HostOp>& ops) {
  if (ops.empty()) return Status::ok();
  thread_local Runner runner;
  return runner.run(ops);
}

}  // namespace coll::exec
