// submit.cc — from a validated request to a HostOp the executor runs, now
// or at the end of the enclosing group; calls on device buffers go to the
// device path (device/entry/device_entry.h).
#include <algorithm>
#include <cstring>
#include <memory>
#include <vector>

#include "core/buffer_kind.h"
#include "core/comm.h"
#include "core/op_request.h"
#include "core/record_hooks.h"
#include "device/entry/device_entry.h"
#include "executor/board_collectives.h"
#include "executor/host_executor.h"
#include "coll/base/log.h"

namespace coll::core {
namespace {

using sched::CollKind;

struct Queued {
  collComm* comm;
  exec::HostOp op;
  std::shared_ptr<const Plan> plan;  // keeps op.schedule alive
  // Send/recv to self: matched with each other at group end.
  bool self = false;
  CollKind selfKind = CollKind::Send;
  // In-place one-shot: a private copy of the input (see submit()).
  std::vector<char> inputCopy;
  uint64_t fr = 0;  // its flight recorder entry
};

// The call's end in the flight recorder, and its error there.
void recordEnd(collComm* comm, uint64_t fr, const Status& s) {
  if (!s.isOk()) comm->recorder->setError(fr, s.message());
  comm->recorder->end(fr, s.isOk());
}

struct GroupState {
  int depth = 0;
  std::vector<Queued> ops;
};
thread_local GroupState tGroup;

const sched::Schedule kEmptySchedule{};

// The tuner's decision for a call not in the plan cache (shared by planFor
// and decisionFor, so collGetPlanInfo reports what a call would do).
tune::Decision decideFresh(collComm* comm, CollKind k, size_t count, size_t es) {
  return comm->tuner->choose(k, count, es);
}


std::shared_ptr<const Plan> planFor(collComm* comm, const OpRequest& r, size_t es) {
  int key = r.root;
  if (auto p = comm->plans.find(r.kind, r.count, es, key)) return p;
  Plan plan;
  plan.decision = decideFresh(comm, r.kind, r.count, es);
  sched::Chunking chunking = plan.decision.chunking;
  if (!comm->ringOrder.empty()) chunking.ringOrder = comm->ringOrder.data();
  plan.schedule = sched::buildSchedule(r.kind, plan.decision.algo, comm->rank, comm->nranks, r.root, r.count, chunking);
  return comm->plans.insert(r.kind, r.count, es, key, std::move(plan));
}

// Self send/recv: on each communicator the k-th send to self meets the k-th
// recv from self of the group; each pair is a plain copy, done before the
// rest of the group runs (all pairs are checked before any is copied).
Status matchSelfPairs(std::vector<Queued>& queued) {
  std::vector<collComm*> comms;
  for (const Queued& q : queued)
    if (q.self && std::find(comms.begin(), comms.end(), q.comm) == comms.end()) comms.push_back(q.comm);
  std::vector<std::pair<const Queued*, const Queued*>> pairs;
  for (collComm* c : comms) {
    std::vector<const Queued*> sends, recvs;
    for (const Queued& q : queued)
      if (q.self && q.comm == c) (q.selfKind == CollKind::Send ? sends : recvs).push_back(&q);
    if (sends.size() != recvs.size())
      return makeError(collInvalidUsage, "rank {}: {} collSend to itself but {} collRecv from itself in one group", c->rank,
                       sends.size(), recvs.size());
    for (size_t k = 0; k < sends.size(); ++k) {
      const exec::Signature &s = sends[k]->op.sig, &r = recvs[k]->op.sig;
      if (s.count != r.count || s.dtype != r.dtype)
        return makeError(collArgMismatch, "rank {}: send to self #{} of {} x dtype {} meets a recv of {} x dtype {}",
                         c->rank, k, s.count, s.dtype, r.count, r.dtype);
      pairs.emplace_back(sends[k], recvs[k]);
    }
  }
  for (auto [send, recv] : pairs)
    if (send->op.sig.count > 0) memmove(recv->op.output, send->op.input, send->op.sig.count * send->op.elemSize);
  return Status::ok();
}

// A send whose buffer another op of the group writes (a send and a receive
// on one buffer, as nccl-tests' in-place send/recv makes) sends a copy
// taken now: the receive may land a chunk before the send of that chunk
// has left, as the two ops' chunks move independently.
void copySharedSendBuffers(std::vector<Queued>& queued) {
  auto outputEnd = [](const Queued& q) {
    const size_t n = static_cast<size_t>(q.comm->nranks), bytes = q.op.sig.count * q.op.elemSize;
    switch (q.op.sig.coll) {
      case CollKind::Send: return q.op.output;
      case CollKind::AllGather: return q.op.output + n * bytes;
      default: return q.op.output + bytes;
    }
  };
  for (Queued& s : queued) {
    if (s.self || s.op.sig.coll != CollKind::Send || s.op.sig.count == 0) continue;
    const char* lo = s.op.input;
    const char* hi = lo + s.op.sig.count * s.op.elemSize;
    for (const Queued& o : queued) {
      if (&o == &s || o.self || o.op.output == nullptr) continue;
      const char* end = outputEnd(o);
      if (end > o.op.output && lo < end && o.op.output < hi) {
        s.inputCopy.assign(lo, hi);
        s.op.input = s.inputCopy.data();
        break;
      }
    }
  }
}

Status runQueued(std::vector<Queued>& queued) {
  for (const Queued& q : queued) q.comm->recorder->start(q.fr);
  Status s = matchSelfPairs(queued);
  if (s.isOk()) {
    copySharedSendBuffers(queued);
    std::vector<exec::HostOp> ops;
    ops.reserve(queued.size());
    for (const Queued& q : queued)
      if (!q.self) ops.push_back(q.op);
    s = exec::runHostOps(ops);
  }
  for (const Queued& q : queued) recordEnd(q.comm, q.fr, s);
  return s;
}

}  // namespace

exec::OpKind opKindOf(int op) {
  switch (op) {
    case collSum: return exec::OpKind::Sum;
    case collProd: return exec::OpKind::Prod;
    case collMax: return exec::OpKind::Max;
    case collMin: return exec::OpKind::Min;
    case collAvg: return exec::OpKind::Avg;
    default: return exec::OpKind::PreMulSum;
  }
}

kernels::ReduceFn reduceFnOf(collComm* comm, const OpRequest& r, const void** deviceScalar) {
  if (deviceScalar != nullptr) *deviceScalar = nullptr;
  kernels::ReduceFn fn;
  fn.dtype = static_cast<kernels::DType>(r.dtype);
  switch (r.op) {
    case collSum: fn.op = kernels::Op::Sum; break;
    case collProd: fn.op = kernels::Op::Prod; break;
    case collMax: fn.op = kernels::Op::Max; break;
    case collMin: fn.op = kernels::Op::Min; break;
    case collAvg:
      fn.op = kernels::Op::Sum;
      fn.divisor = static_cast<uint64_t>(comm->nranks);
      break;
    default: {
      const std::optional<RedOpTable::Entry>& e = r.preMul;  // set by validate()
      fn.op = kernels::Op::Sum;
      fn.premul = true;
      const void* at = r.scalarAt != nullptr ? r.scalarAt : e->pointer;
      if (e->residence == collScalarHostImmediate) fn.scalar = e->value;
      else if (deviceScalar != nullptr) *deviceScalar = at;  // the device kernels read it
      else fn.scalar = scalarFromMemory(at, e->dtype);
      break;
    }
  }
  return fn;
}

bool inGroup() { return tGroup.depth > 0; }

tune::Decision decisionFor(collComm* comm, CollKind k, size_t count, size_t elemSize, int root) {
  if (auto p = comm->plans.find(k, count, elemSize, root)) return p->decision;
  return decideFresh(comm, k, count, elemSize);
}

namespace {

// A validated host call: run now, or queue it in the enclosing group.
Status submitHost(collComm* comm, const OpRequest& r, bool queue) {
  const size_t es = kernels::dtypeSize(static_cast<kernels::DType>(r.dtype));
  const bool p2p = r.kind == CollKind::Send || r.kind == CollKind::Recv;

  Queued q;
  q.comm = comm;
  exec::HostOp& op = q.op;
  op.comm = &comm->view;
  op.input = static_cast<const char*>(r.sendbuf);
  op.output = static_cast<char*>(r.recvbuf);
  op.elemSize = es;
  op.reduces = sched::reduces(r.kind);
  // count 0 moves nothing: the op's scalar is never read (it may be device memory).
  if (op.reduces && r.count > 0) op.fn = reduceFnOf(comm, r, nullptr);
  op.sig.count = r.count;
  op.sig.coll = r.kind;
  op.sig.dtype = static_cast<uint8_t>(r.dtype);
  op.sig.op = op.reduces ? opKindOf(r.op) : exec::OpKind::None;
  op.sig.root = r.root;
  if (p2p) {
    op.sig.seq = r.kind == CollKind::Send ? comm->sendSeq[r.root]++ : comm->recvSeq[r.root]++;
  } else {
    op.sig.seq = comm->collSeq++;
    op.checkRing = comm->checkMode;
  }

  record::CallInfo info =
      callInfo(r, p2p ? -1 : static_cast<int64_t>(op.sig.seq), p2p ? static_cast<int64_t>(op.sig.seq) : -1, false);
  const bool onBoard = !queue && comm->board && !(p2p && r.root == comm->rank) && exec::boardFits(r.kind, r.count, es);
  if (onBoard) {
    info.algo = record::kBoard;
    info.channels = 1;
  }
  q.fr = comm->recorder->begin(info, queue ? record::CallState::Enqueued : record::CallState::Started);
  op.recorder = comm->recorder->on() ? comm->recorder.get() : nullptr;
  op.frHandle = q.fr;

  if (p2p && r.root == comm->rank) {
    if (!queue) {
      recordEnd(comm, q.fr, Status(collInvalidUsage, "send/recv to itself outside a group"));
      return makeError(collInvalidUsage, "{} to/from itself (peer {}) needs its matching call in the same collGroupStart/End",
                       r.api, r.root);
    }
    q.self = true;
    q.selfKind = r.kind;
    op.schedule = &kEmptySchedule;
    tGroup.ops.push_back(std::move(q));
    return Status::ok();
  }

  // A tiny all-reduce, reduce, broadcast or all-gather outside a group: a
  // line per rank through the board (executor/board_collectives.h), which
  // compares the calls' signatures too.
  if (onBoard) {
    exec::BoardCall b;
    b.comm = &comm->view;
    b.kind = r.kind;
    b.send = r.sendbuf;
    b.recv = r.recvbuf;
    b.count = r.count;
    b.elemSize = es;
    b.root = r.root;
    b.fn = op.fn;
    b.sig = op.sig;
    b.op = ++comm->boardOps;
    b.checkAll = comm->checkMode;
    Status s = exec::boardCollective(b);
    recordEnd(comm, q.fr, s);
    return s;
  }
  if (r.count == 0) {
    if (!op.checkRing) {
      recordEnd(comm, q.fr, Status::ok());
      return Status::ok();  // NCCL: count 0 succeeds at once
    }
    op.schedule = &kEmptySchedule;
  } else {
    q.plan = planFor(comm, r, es);
    op.schedule = &q.plan->schedule;
    op.sig.algo = q.plan->decision.algo;
    comm->recorder->setAlgo(q.fr, static_cast<uint8_t>(op.sig.algo),
                            static_cast<uint8_t>(q.plan->schedule.channels.size()));
    // One-shot (N >= 3) accumulates into Output in rank order and reads its
    // own Input only at its turn; in place, earlier ranks' data would
    // overwrite it first.  The tuner picks it for small messages (and for
    // N = 2, where it is in-place safe), so the copy stays cheap.
    if (r.sendbuf == r.recvbuf && !sched::algoInPlaceSafe(r.kind, op.sig.algo, comm->nranks)) {
      q.inputCopy.assign(op.input, op.input + r.count * es);
      op.input = q.inputCopy.data();
    }
  }
  if (queue) {
    tGroup.ops.push_back(std::move(q));
    return Status::ok();
  }
  // Not in a group: run now.  q (plan, input copy) outlives the run.
  thread_local std::vector<exec::HostOp> single;
  single.assign(1, op);
  Status s = exec::runHostOps(single);
  recordEnd(comm, q.fr, s);
  return s;
}

// Host when every buffer the call uses on this rank is host memory, Device
// when every one is device memory of one GPU; a mix is an argument error.
// A process that has not loaded the CUDA driver has no device memory: its
// calls are Host without a question per buffer (cudaDriverLoaded()).
Result<MemKind> requestMemory(collComm* comm, const OpRequest& r) {
  if (r.count == 0 || !cudaDriverLoaded()) return MemKind::Host;
  const Ranges g = rangesOf(r, comm->rank, comm->nranks);
  const BufferKind in = g.inElems > 0 ? bufferKind(r.sendbuf) : BufferKind{};
  const BufferKind out = g.outElems > 0 ? bufferKind(r.recvbuf) : BufferKind{};
  const bool inDev = g.inElems > 0 && in.kind == MemKind::Device;
  const bool outDev = g.outElems > 0 && out.kind == MemKind::Device;
  if (g.inElems > 0 && g.outElems > 0 && inDev != outDev)
    return makeError(collInvalidArgument, "{}: sendbuff is {} memory but recvbuff is {} memory; both must be host or both device",
                     r.api, inDev ? "device" : "host", outDev ? "device" : "host");
  if (inDev && outDev && in.device != out.device)
    return makeError(collInvalidArgument, "{}: sendbuff is on GPU {} but recvbuff on GPU {}", r.api, in.device, out.device);
  const MemKind kind = inDev || outDev ? MemKind::Device : MemKind::Host;
  // A pre-mul op's scalar "in device memory" (collScalarDevice) is read where
  // the reduction runs: by the host for host buffers, by the GPU for device
  // buffers.  The other way round would fault.  (r.preMul: set by validate()
  // for a reducing call's pre-mul op.)
  if (const std::optional<RedOpTable::Entry>& e = r.preMul; e && e->residence == collScalarDevice) {
    const bool scalarDev = bufferKind(r.scalarAt != nullptr ? r.scalarAt : e->pointer).kind == MemKind::Device;
    if (scalarDev != (kind == MemKind::Device))
      return makeError(collInvalidArgument, "{}: op {}'s scalar (collScalarDevice) is {} memory but the buffers are {} "
                       "memory; they must match", r.api, r.op, scalarDev ? "device" : "host",
                       kind == MemKind::Device ? "device" : "host");
  }
  return kind;
}

}  // namespace

Status submit(collComm* comm, OpRequest r) {
  COLL_CHECK(validate(comm, r));
  Result<MemKind> mem = requestMemory(comm, r);
  COLL_CHECK(mem.status());
  // Device calls go on the caller's stream at once, also inside a group:
  // they are asynchronous already, and every rank enqueues them in order.
  if (mem.value() == MemKind::Device) {
    // Recorded as enqueued: the stream runs it later, unobserved here
    // (and the device path numbers its calls apart: no coll_seq yet).
    const uint64_t fr = comm->recorder->begin(callInfo(r, -1, -1, true), record::CallState::Enqueued);
    Status s = submitDevice(comm, r);
    if (!s.isOk()) recordEnd(comm, fr, s);
    return s;
  }
  return submitHost(comm, r, inGroup());
}

Status runHostNow(collComm* comm, OpRequest r) {
  COLL_CHECK(validate(comm, r));
  return submitHost(comm, r, false);
}

Status queueHostNow(collComm* comm, OpRequest r) {
  COLL_CHECK(validate(comm, r));
  return submitHost(comm, r, true);
}

Status groupStart() {
  ++tGroup.depth;
  return Status::ok();
}

Status groupEnd() {
  if (tGroup.depth == 0) return makeError(collInvalidUsage, "collGroupEnd without a matching collGroupStart");
  if (--tGroup.depth > 0) return Status::ok();
  std::vector<Queued> ops = std::move(tGroup.ops);
  tGroup.ops.clear();
  // Device send/recv first: they are only enqueued, while the host ops
  // block until done (a host op of the group may wait for a peer whose
  // device work is queued behind this launch on no stream of ours).
  Status s = flushDeviceGroup();
  if (s.isOk()) {
    s = runQueued(ops);
  } else {
    for (const Queued& q : ops) recordEnd(q.comm, q.fr, s);
  }
  if (!s.isOk()) {
    // Record on every communicator of the group.
    std::vector<collComm*> seen;
    for (Queued& q : ops)
      if (std::find(seen.begin(), seen.end(), q.comm) == seen.end()) {
        seen.push_back(q.comm);
        fail(q.comm, s);
      }
  }
  return s;
}

}  // namespace coll::core
