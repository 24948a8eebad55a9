// local_clique.cc — see local_clique.h.
#include "device/local_clique.h"

#include <algorithm>
#include <chrono>
#include <set>
#include <string>

#include "p2p/cuda_status.h"
#include "device/current_device.h"
#include "device/local_reduce.h"
#include "executor/msg_header.h"

namespace coll::device {
namespace {

using p2p::cudaStatus;
using p2p::enablePeerAccess;

Status makeEvent(int device, cudaEvent_t* e) {
  const CurrentDevice on(device);
  COLL_CHECK(on.status());
  return cudaStatus(cudaEventCreateWithFlags(e, cudaEventDisableTiming), "cudaEventCreateWithFlags");
}

// s waits for e, unless e was recorded on s itself.
Status waitFor(cudaStream_t s, cudaEvent_t e) {
  return cudaStatus(cudaStreamWaitEvent(s, e, 0), "cudaStreamWaitEvent");
}

}  // namespace

LocalClique::LocalClique(const LocalCliqueParams& p) : p_(p) {}

Result<std::shared_ptr<LocalClique>> LocalClique::create(const LocalCliqueParams& p) {
  std::shared_ptr<LocalClique> c(new LocalClique(p));
  COLL_CHECK(c->init());
  return c;
}

Status LocalClique::init() {
  const int n = nranks();
  hubOf_.assign(n, -1);
  for (int r = 0; r < n; ++r) {
    auto it = std::find(hubDevice_.begin(), hubDevice_.end(), p_.devices[r]);
    hubOf_[r] = static_cast<int>(it - hubDevice_.begin());
    if (it == hubDevice_.end()) hubDevice_.push_back(p_.devices[r]);
  }
  // A hub reads and writes the buffers of ranks on other GPUs of the
  // process through unified addressing: it needs peer access to each.
  for (int a : hubDevice_)
    for (int b : hubDevice_) {
      if (a == b) continue;
      int can = 0;
      COLL_CHECK(cudaStatus(cudaDeviceCanAccessPeer(&can, a, b), "cudaDeviceCanAccessPeer"));
      if (!can)
        return makeError(collInvalidUsage, "GPU {} cannot access GPU {}'s memory (no peer access), and ranks of this "
                         "process are on both", a, b);
      const CurrentDevice on(a);
      COLL_CHECK(on.status());
      COLL_CHECK(enablePeerAccess(b));
    }
  for (int d : hubDevice_) {
    const CurrentDevice on(d);
    COLL_CHECK(on.status());
    void* mem = nullptr;
    COLL_CHECK(cudaStatus(cudaMalloc(&mem, p_.scratchBytes), "cudaMalloc of the local path's scratch"));
    scratch_.push_back(static_cast<char*>(mem));
    int sms = 0;
    COLL_CHECK(cudaStatus(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, d), "cudaDeviceGetAttribute"));
    hubBlocks_.push_back(localReduceMaxBlocks(sms));
    out_.push_back(nullptr);
    COLL_CHECK(makeEvent(d, &out_.back()));
  }
  for (int r = 0; r < n; ++r) {
    for (auto* events : {&in_, &sent_, &received_}) {
      events->push_back(nullptr);
      COLL_CHECK(makeEvent(p_.devices[r], &events->back()));
    }
    order_.push_back(std::make_unique<StreamOrder>());
  }
  posted_.resize(n);
  p2pOpen_.assign(n, 0);
  left_.assign(n, false);
  return Status::ok();
}

LocalClique::~LocalClique() {
  // Every rank's communicator is gone; its queued work may still run.
  auto destroy = [](int device, cudaEvent_t e) {
    const CurrentDevice on(device);
    if (e != nullptr) (void)cudaEventDestroy(e);
  };
  for (size_t r = 0; r < in_.size(); ++r) destroy(p_.devices[r], in_[r]);
  for (size_t r = 0; r < sent_.size(); ++r) destroy(p_.devices[r], sent_[r]);
  for (size_t r = 0; r < received_.size(); ++r) destroy(p_.devices[r], received_[r]);
  for (size_t h = 0; h < out_.size(); ++h) destroy(hubDevice_[h], out_[h]);
  for (size_t h = 0; h < scratch_.size(); ++h) {
    const CurrentDevice on(hubDevice_[h]);
    (void)cudaDeviceSynchronize();  // the scratch may still be read
    (void)cudaFree(scratch_[h]);
  }
  order_.clear();
  (void)cudaGetLastError();
}

Status LocalClique::status() const {
  std::lock_guard<std::mutex> lock(mu_);
  return failed_;
}

Status LocalClique::failLocked(Status s) {
  if (failed_.isOk()) failed_ = std::move(s);
  cv_.notify_all();
  return failed_;
}

Status LocalClique::postCollective(int rank, const DeviceOp& op) {
  std::lock_guard<std::mutex> lock(mu_);
  if (!failed_.isOk()) return failed_;
  posted_[rank].push_back(op);
  return launchReadyLocked();
}

Status LocalClique::launchReadyLocked() {
  for (;;) {
    for (const auto& q : posted_)
      if (q.empty()) {
        cv_.notify_all();
        return Status::ok();
      }
    std::vector<DeviceOp> ops;
    for (auto& q : posted_) {
      ops.push_back(q.front());
      q.pop_front();
    }
    Status s = launchCollective(launched_++, ops);
    if (!s.isOk()) return failLocked(std::move(s));
  }
}

Status LocalClique::launchCollective(uint64_t call, std::vector<DeviceOp>& ops) {
  const int n = nranks();
  // The calls' arguments, compared here, where they meet.
  exec::Signature first = ops[0].sig;
  first.seq = call;
  for (int r = 1; r < n; ++r) {
    exec::Signature theirs = ops[r].sig;
    theirs.seq = call;
    const std::string diff = exec::compareSignatures(first, 0, theirs, r);
    if (!diff.empty())
      return makeError(collArgMismatch, "ranks of this process made device calls with different arguments: {} (rank "
                       "{} called {}; rank 0 called {})", diff, r, exec::describe(theirs), exec::describe(first));
  }
  // Each rank's stream after its previous call (stream_order.h), then its
  // inputs-ready event.
  std::vector<StreamOrder::Capture> order(n);
  for (int r = 0; r < n; ++r) {
    const CurrentDevice on(p_.devices[r]);
    COLL_CHECK(on.status());
    Result<StreamOrder::Capture> c = order_[r]->before(ops[r].stream);
    COLL_CHECK(c.status());
    order[r] = c.value();
  }
  // Live, or every stream in one capture: an event of one capture cannot
  // order another's streams (cudaErrorStreamCaptureIsolation).
  for (int r = 1; r < n; ++r)
    if (order[r].active != order[0].active || order[r].id != order[0].id)
      return makeError(collInvalidUsage, "device call {}: rank {}'s stream is {} and rank 0's is {}: the ranks of one "
                       "process need their streams in one CUDA graph capture (forked from one origin stream), or "
                       "none in a capture", call, r, order[r].active ? "capturing" : "not capturing",
                       order[0].active ? (order[r].active ? "in another capture" : "capturing") : "not capturing");
  for (int r = 0; r < n; ++r) {
    const CurrentDevice on(p_.devices[r]);
    COLL_CHECK(on.status());
    COLL_CHECK(cudaStatus(cudaEventRecord(in_[r], ops[r].stream), "cudaEventRecord"));
  }

  sched::LocalPlanArgs a;
  a.kind = ops[0].kind;
  a.count = ops[0].count;
  a.elemSize = kernels::dtypeSize(ops[0].fn.dtype);
  a.root = ops[0].root;
  a.premul = ops[0].fn.premul;
  a.scratchBytes = p_.scratchBytes;
  for (int r = 0; r < n; ++r)
    a.ranks.push_back({reinterpret_cast<uintptr_t>(ops[r].send), reinterpret_cast<uintptr_t>(ops[r].recv), hubOf_[r]});
  for (char* s : scratch_) a.scratch.push_back(reinterpret_cast<uintptr_t>(s));
  const std::vector<std::vector<sched::LocalItem>> plan = sched::planLocal(a);

  // Each hub on its GPU's lowest rank's stream: after every rank's inputs,
  // its slice, then its end.
  std::vector<cudaStream_t> hubStream(hubDevice_.size());
  for (size_t h = 0; h < hubDevice_.size(); ++h) {
    hubStream[h] = ops[std::find(hubOf_.begin(), hubOf_.end(), static_cast<int>(h)) - hubOf_.begin()].stream;
    const CurrentDevice on(hubDevice_[h]);
    COLL_CHECK(on.status());
    for (int r = 0; r < n; ++r)
      if (ops[r].stream != hubStream[h]) COLL_CHECK(waitFor(hubStream[h], in_[r]));
    COLL_CHECK(runHub(h, hubStream[h], ops, plan[h]));
    COLL_CHECK(cudaStatus(cudaEventRecord(out_[h], hubStream[h]), "cudaEventRecord"));
  }
  for (int r = 0; r < n; ++r) {
    const CurrentDevice on(p_.devices[r]);
    COLL_CHECK(on.status());
    for (size_t h = 0; h < hubDevice_.size(); ++h)
      if (ops[r].stream != hubStream[h]) COLL_CHECK(waitFor(ops[r].stream, out_[h]));
    COLL_CHECK(order_[r]->after(ops[r].stream, order[r]));
  }
  return Status::ok();
}

Status LocalClique::runHub(size_t hub, cudaStream_t stream, const std::vector<DeviceOp>& ops,
                           const std::vector<sched::LocalItem>& items) {
  const size_t es = kernels::dtypeSize(ops[0].fn.dtype);
  for (const sched::LocalItem& it : items) {
    const auto* src0 = reinterpret_cast<const void*>(it.src[0].addr);
    if (it.kind == sched::LocalItem::Kind::Copy && it.ndst == 1) {
      COLL_CHECK(cudaStatus(cudaMemcpyAsync(reinterpret_cast<void*>(it.dst[0]), src0, it.count * es, cudaMemcpyDefault,
                                            stream),
                            "cudaMemcpyAsync"));
      continue;
    }
    if (it.kind == sched::LocalItem::Kind::Copy) {  // one read, several outputs
      void* dst[sched::kLocalFan];
      for (int k = 0; k < it.ndst; ++k) dst[k] = reinterpret_cast<void*>(it.dst[k]);
      COLL_CHECK(cudaStatus(launchLocalCopy(src0, dst, it.ndst, it.count * es, hubBlocks_[hub], stream),
                            "the local copy kernel"));
      continue;
    }
    LocalReduceLaunch l;
    l.dtype = ops[0].fn.dtype;
    l.op = ops[0].fn.op;
    l.nsrc = it.nsrc;
    l.ndst = it.ndst;
    l.count = it.count;
    l.divisor = it.post ? ops[0].fn.divisor : 0;
    for (int k = 0; k < it.ndst; ++k) l.dst[k] = reinterpret_cast<void*>(it.dst[k]);
    for (int k = 0; k < it.nsrc; ++k) {
      const sched::LocalSource& src = it.src[k];
      l.src[k] = reinterpret_cast<const void*>(src.addr);
      if (src.preRank < 0) continue;
      // Each rank's own scalar (host or device).
      const DeviceOp& owner = ops[src.preRank];
      l.preMask |= 1u << k;
      l.scalarPtr[k] = owner.deviceScalar;
      l.scalarBits[k] = owner.deviceScalar != nullptr ? 0 : hostScalarBits(l.dtype, owner.fn.scalar);
    }
    COLL_CHECK(cudaStatus(launchLocalReduce(l, hubBlocks_[hub], stream), "the local reduction kernel"));
  }
  return Status::ok();
}

Status LocalClique::postP2p(int rank, const std::vector<P2pOp>& ops, cudaStream_t s) {
  std::lock_guard<std::mutex> lock(mu_);
  if (!failed_.isOk()) return failed_;
  for (const P2pOp& op : ops) {
    const PendingP2p p{rank, op.buf, op.bytes, s};
    if (op.isSend) sends_[{rank, op.peer}].push_back(p);
    else recvs_[{op.peer, rank}].push_back(p);
    ++p2pOpen_[rank];
  }
  Status st = matchP2pLocked();
  cv_.notify_all();
  return st.isOk() ? st : failLocked(std::move(st));
}

Status LocalClique::matchP2pLocked() {
  for (auto& [pair, sends] : sends_) {
    auto found = recvs_.find(pair);
    if (found == recvs_.end()) continue;
    std::deque<PendingP2p>& recvs = found->second;
    while (!sends.empty() && !recvs.empty()) {
      const PendingP2p send = sends.front(), recv = recvs.front();
      sends.pop_front();
      recvs.pop_front();
      --p2pOpen_[pair.first];
      --p2pOpen_[pair.second];
      if (send.bytes != recv.bytes)
        return makeError(collArgMismatch, "device send/recv sizes differ: count {} (rank {}) vs {} (rank {}), in "
                         "bytes (rank {} sends to rank {})", send.bytes, pair.first, recv.bytes, pair.second,
                         pair.first, pair.second);
      COLL_CHECK(launchP2p(send, recv));
    }
  }
  return Status::ok();
}

Status LocalClique::launchP2p(const PendingP2p& send, const PendingP2p& recv) {
  if (send.bytes == 0) return Status::ok();
  const int from = send.rank, to = recv.rank;
  if (send.stream != recv.stream) {
    const CurrentDevice on(p_.devices[from]);
    COLL_CHECK(on.status());
    COLL_CHECK(cudaStatus(cudaEventRecord(sent_[from], send.stream), "cudaEventRecord"));
  }
  {
    const CurrentDevice on(p_.devices[to]);
    COLL_CHECK(on.status());
    if (send.stream != recv.stream) COLL_CHECK(waitFor(recv.stream, sent_[from]));
    COLL_CHECK(cudaStatus(cudaMemcpyAsync(recv.buf, send.buf, send.bytes, cudaMemcpyDefault, recv.stream),
                          "cudaMemcpyAsync"));
    if (send.stream == recv.stream) return Status::ok();
    COLL_CHECK(cudaStatus(cudaEventRecord(received_[to], recv.stream), "cudaEventRecord"));
  }
  // The sender's buffer is free again only once the copy has read it.
  const CurrentDevice on(p_.devices[from]);
  COLL_CHECK(on.status());
  return waitFor(send.stream, received_[to]);
}

bool LocalClique::doneLocked(int rank) const { return posted_[rank].empty() && p2pOpen_[rank] == 0; }

std::string LocalClique::stuckRanksLocked(int rank) const {
  std::set<int> stuck;
  if (!posted_[rank].empty())
    for (int q = 0; q < nranks(); ++q)
      if (posted_[q].empty()) stuck.insert(q);
  for (const auto& [pair, q] : sends_)
    if (pair.first == rank && !q.empty()) stuck.insert(pair.second);
  for (const auto& [pair, q] : recvs_)
    if (pair.second == rank && !q.empty()) stuck.insert(pair.first);
  std::string out;
  for (int q : stuck) out += (out.empty() ? "" : ", ") + std::to_string(q);
  return out;
}

Status LocalClique::await(int rank, const std::atomic<bool>& aborted) {
  using Clock = std::chrono::steady_clock;
  const auto deadline = Clock::now() + std::chrono::milliseconds(p_.timeoutMs);
  std::unique_lock<std::mutex> lock(mu_);
  for (;;) {
    if (!failed_.isOk()) return failed_;
    if (doneLocked(rank)) return Status::ok();
    if (aborted.load())
      return failLocked(makeError(collAborted, "rank {}'s communicator was aborted while its device call waited for "
                                  "the other ranks of this process", rank));
    if (p_.timeoutMs > 0 && Clock::now() >= deadline)
      return failLocked(makeError(collTimeout, "rank {}: a device call waited {} ms for the other ranks of this "
                                  "process: stuck: rank(s) {} (did not arrive; a thread that makes the calls of "
                                  "several ranks must make them inside collGroupStart/End)", rank, p_.timeoutMs,
                                  stuckRanksLocked(rank)));
    // Woken by every post; the abort flag has no notification of its own.
    cv_.wait_for(lock, std::chrono::milliseconds(10));
  }
}

Status LocalClique::joinStreams(int rank, const std::vector<cudaStream_t>& streams) {
  std::lock_guard<std::mutex> lock(mu_);
  const CurrentDevice on(p_.devices[rank]);
  COLL_CHECK(on.status());
  return order_[rank]->join(streams);
}

void LocalClique::leave(int rank) {
  std::lock_guard<std::mutex> lock(mu_);
  left_[rank] = true;
  for (int q = 0; q < nranks(); ++q)
    if (q != rank && !left_[q] && !doneLocked(q)) {
      (void)failLocked(makeError(collRemoteError, "rank {} destroyed its communicator while rank {} waited for its "
                                 "device calls", rank, q));
      return;
    }
}

}  // namespace coll::device
