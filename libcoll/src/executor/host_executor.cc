#include "executor/host_executor.h"

#include <algorithm>
#include <cstring>

#include "executor/host_runner.h"
#include "coll/base/backoff.h"
#include "coll/base/clock.h"
#include "coll/base/log.h"

namespace coll::exec {
namespace detail {

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
  // A large plain Send over a transport that copies into the kernel anyway
  // leaves its payload in its source buffer (one copy fewer), and a large
  // RecvCopySend forwards from the Output it just wrote instead of copying
  // into the slot too.  Only for collectives that do not reduce: they write
  // each Output element once and never write Input, so the bytes stay put
  // until settleSends() (in place, the own-block copy is skipped:
  // combine() sees dst == src).
  const bool external = (s.kind == StepKind::Send || s.kind == StepKind::RecvCopySend) && !op.reduces &&
                        payload >= kExternalSendBytes && sc->sendsExternal();

  switch (s.kind) {
    case StepKind::Send:
      if (!external) combine(op, s, out, nullptr, srcPtr(op, s), s.count);
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
      if (!external) memcpy(out, wire, payload);
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
    if (external)
      sc->postExternal(kSlotHeaderBytes, s.kind == StepKind::Send ? srcPtr(op, s) : dstPtr(op, s), payload);
    else sc->post(kSlotHeaderBytes + payload);
    consumed(st.op, ch, s.sendPeer, 0);
  }
  return Try::Done;
}

void Runner::placeScratch() {
  constexpr size_t kAlign = 64;
  size_t total = 0;
  for (const HostOp& op : ops_()) total += (op.schedule->scratchElems * op.elemSize + kAlign - 1) / kAlign * kAlign;
  if (total == 0) return;
  if (scratch_.size() < total + kAlign) scratch_.resize(total + kAlign);
  const auto base = reinterpret_cast<uintptr_t>(scratch_.data());
  char* at = scratch_.data() + ((base + kAlign - 1) / kAlign * kAlign - base);
  for (HostOp& op : ops_()) {
    const size_t bytes = op.schedule->scratchElems * op.elemSize;
    if (bytes == 0) continue;
    op.scratch = at;
    at += (bytes + kAlign - 1) / kAlign * kAlign;
  }
}

Status Runner::run(std::vector<HostOp>& ops) {
  opsPtr_ = &ops;
  placeScratch();
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
  int64_t lastRecordedNs = 0;
  bool progressedSinceCheck = false;
  // A failure seen by the slow checks (a peer's notice, a dead peer) ends
  // the call only if one more pass made no progress: a peer may have sent
  // us all we wait for before it failed in a later call, and a rank that
  // was descheduled meanwhile must finish this one as the others did.
  bool failureSeen = false;
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
      failureSeen = false;
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
    if (Status f = slowChecks(now); !f.isOk()) {
      if (failureSeen) {
        recordWaits();
        failure_ = f;
        break;
      }
      failureSeen = true;
      continue;
    }
    int64_t idleMs = (now - lastProgress) / 1000000;
    if (idleMs >= timeoutMs) {
      recordWaits();
      failure_ = timeoutError(idleMs, timeoutMs);
      break;
    }
    // A call stuck for a while says so in the flight recorder (a SIGUSR2
    // dump of a hung job shows where), at most every 100 ms.
    if (idleMs >= 100 && now - lastRecordedNs >= 100'000'000) {
      recordWaits();
      lastRecordedNs = now;
    }
  }
  if (armed) bell->cancelSleep();
  // Messages that could not leave yet (a failure, a peer gone) must not go
  // on reading the caller's buffers after we return.
  for (const CommView* c : comms_)
    if (c->transport) c->transport->settleSends();
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

}  // namespace detail

Status runHostOps(std::vector<HostOp>& ops) {
  if (ops.empty()) return Status::ok();
  thread_local detail::Runner runner;
  return runner.run(ops);
}

}  // namespace coll::exec
