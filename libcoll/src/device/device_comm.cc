// device_comm.cc — creation (the P2P transport's blocks, the device tables,
// the settings ranks must share), teardown, the error record, and the
// building blocks of the device collectives (barrier, one-launch kernels,
// groups, copy, stage-in, reduce chain).
#include "device/device_comm.h"

#include <algorithm>
#include <cstring>
#include <string>

#include "coll/device_reduce.h"
#include "p2p/cuda_status.h"
#include "device/current_device.h"
#include "device/program_launch.h"
#include "device/small_allreduce.h"
#include "p2p/peer_barrier.h"
#include "schedule/device_group_plan.h"
#include "schedule/device_stream_ops.h"
#include "coll/base/log.h"

namespace coll::device {

using p2p::kErrMismatch;
using p2p::kP2pMaxOps;
using p2p::launchBarrier;
using p2p::launchP2p;
using p2p::P2pLaunch;

using p2p::cudaStatus;

namespace {

// op as the plans of schedule/ see it, on rank `rank` of nranks.
sched::DeviceGroupCall groupCallOf(const DeviceOp& op, int rank, int nranks) {
  sched::DeviceGroupCall c;
  c.kind = op.kind;
  c.count = op.count;
  c.elemSize = kernels::dtypeSize(op.fn.dtype);
  c.dtype = static_cast<int>(op.fn.dtype);
  c.op = static_cast<int>(op.fn.op);
  c.divisor = op.fn.divisor;
  c.premul = op.fn.premul;
  c.stream = op.stream;
  c.memory = sched::callMemory(op.kind, op.count, static_cast<uint32_t>(c.elemSize), op.root, rank, nranks, op.send,
                               op.recv, op.deviceScalar);
  return c;
}

const char* programModeName(uint64_t mode) {
  switch (static_cast<ProgramMode>(mode)) {
    case ProgramMode::Off: return "0 (off)";
    case ProgramMode::On: return "1 (on)";
    case ProgramMode::Auto: return "auto";
  }
  return "?";
}

}  // namespace

Result<std::unique_ptr<DeviceComm>> DeviceComm::create(const DeviceCommParams& p, const HostAllGather& allGather,
                                                       bool* peersUnreachable) {
  std::unique_ptr<DeviceComm> c(new DeviceComm(p));
  Status s = c->init(allGather);
  if (peersUnreachable != nullptr) *peersUnreachable = c->unreachable_;
  COLL_CHECK(s);
  return c;
}

Status DeviceComm::init(const HostAllGather& allGather) {
  const int n = p_.nranks;
  // The blocks start zeroed: flags, counters and the p2p words at 0.
  p2p::IpcPeersParams ip;
  ip.rank = p_.rank;
  ip.nranks = n;
  ip.device = p_.device;
  ip.bytes = allocationBytes();
  ip.sizeHint = "COLL_DEVICE_STAGE_BYTES";
  auto peers = p2p::IpcPeers::create(ip, allGather, &unreachable_);
  COLL_CHECK(peers.status());
  peers_ = std::move(peers.value());
  COLL_CHECK(agreeOnSettings(allGather));
  void* hostErr = nullptr;
  COLL_CHECK(cudaStatus(cudaHostAlloc(&hostErr, p2p::kErrorWords * sizeof(unsigned long long), cudaHostAllocMapped),
                        "cudaHostAlloc"));
  hostError_ = static_cast<unsigned long long*>(hostErr);
  std::memset(hostError_, 0, p2p::kErrorWords * sizeof(unsigned long long));
  void* devErr = nullptr;
  COLL_CHECK(cudaStatus(cudaHostGetDevicePointer(&devErr, hostErr, 0), "cudaHostGetDevicePointer"));
  devError_ = static_cast<unsigned long long*>(devErr);

  // Device tables of the peers' addresses, as this rank maps them.
  std::vector<unsigned long long*> flags(n);
  for (int r = 0; r < n; ++r) flags[r] = reinterpret_cast<unsigned long long*>(peers_->block(r)) + p2p::kFlagWord;
  void* flagTable = nullptr;
  COLL_CHECK(cudaStatus(cudaMalloc(&flagTable, n * sizeof(unsigned long long*)), "cudaMalloc"));
  peerFlags_ = static_cast<unsigned long long**>(flagTable);
  COLL_CHECK(cudaStatus(cudaMemcpy(peerFlags_, flags.data(), n * sizeof(unsigned long long*), cudaMemcpyHostToDevice),
                        "cudaMemcpy"));
  std::vector<char*> small(n);
  for (int r = 0; r < n; ++r) small[r] = peers_->block(r) + kControlBytes + 2 * p_.regionBytes;
  void* smallTable = nullptr;
  COLL_CHECK(cudaStatus(cudaMalloc(&smallTable, n * sizeof(char*)), "cudaMalloc"));
  smallSlots_ = static_cast<char**>(smallTable);
  COLL_CHECK(cudaStatus(cudaMemcpy(smallSlots_, small.data(), n * sizeof(char*), cudaMemcpyHostToDevice), "cudaMemcpy"));
  std::vector<char*> ll(n);
  for (int r = 0; r < n; ++r) ll[r] = peers_->block(r) + llOffset();
  void* llTable = nullptr;
  COLL_CHECK(cudaStatus(cudaMalloc(&llTable, n * sizeof(char*)), "cudaMalloc"));
  llSlots_ = static_cast<char**>(llTable);
  COLL_CHECK(cudaStatus(cudaMemcpy(llSlots_, ll.data(), n * sizeof(char*), cudaMemcpyHostToDevice), "cudaMemcpy"));
  void* baseTable = nullptr;
  COLL_CHECK(cudaStatus(cudaMalloc(&baseTable, n * sizeof(char*)), "cudaMalloc"));
  peerBases_ = static_cast<char**>(baseTable);
  COLL_CHECK(cudaStatus(cudaMemcpy(peerBases_, peers_->blocks().data(), n * sizeof(char*), cudaMemcpyHostToDevice),
                        "cudaMemcpy"));
  COLL_LOG(Info, kInit, p_.rank, "device collectives: GPU {} ({}), {} B per staging region, {} ranks mapped, program "
           "kernel {} ({} blocks)", p_.device, peers_->busId(), p_.regionBytes, n,
           programModeName(static_cast<uint64_t>(p_.program)), channels_);
  return Status::ok();
}

DeviceComm::~DeviceComm() {
  // Every collective ends with a barrier that follows all reads of peers'
  // regions, so once this rank's work is done nobody reads its regions.
  if (peers_) (void)cudaDeviceSynchronize();
  if (peerFlags_ != nullptr) (void)cudaFree(peerFlags_);
  if (smallSlots_ != nullptr) (void)cudaFree(smallSlots_);
  if (llSlots_ != nullptr) (void)cudaFree(llSlots_);
  if (peerBases_ != nullptr) (void)cudaFree(peerBases_);
  peers_.reset();  // unmaps the peers' blocks, frees this rank's
  if (hostError_ != nullptr) (void)cudaFreeHost(hostError_);
  (void)cudaGetLastError();
}

Status DeviceComm::asyncStatus() const {
  if (hostError_ == nullptr) return Status::ok();
  const volatile unsigned long long* rec = hostError_;
  const unsigned long long e = rec[0];
  if (e == 0) return Status::ok();
  const int peer = static_cast<int>(e & 0xffffffffu) - 1;
  if (e >> 32 == kErrMismatch) {
    // The kernel wrote the words before the error word (x86 keeps loads in
    // order, so they are complete here).
    const uint64_t mineWords[2] = {rec[1], rec[2]}, theirWords[2] = {rec[3], rec[4]};
    const exec::Signature mine = exec::unpackSignature(mineWords), theirs = exec::unpackSignature(theirWords);
    return makeError(collArgMismatch,
                     "rank {}: ranks made device calls with different arguments: {} (rank {} called {}; "
                     "rank {} called {})", p_.rank, exec::compareSignatures(mine, p_.rank, theirs, peer), peer,
                     exec::describe(theirs), p_.rank, exec::describe(mine));
  }
  // Every rank the kernel waited for in vain (bits for the ranks below
  // kStuckBitRanks; peer is the lowest of them).
  std::string stuck = std::to_string(peer);
  for (int r = peer + 1; r < std::min(p_.nranks, p2p::kStuckBitRanks); ++r)
    if ((rec[p2p::kStuckWord + r / 64] >> (r % 64)) & 1) stuck += ", " + std::to_string(r);
  if (p_.nranks > p2p::kStuckBitRanks && peer < p2p::kStuckBitRanks)
    stuck += ", maybe others above " + std::to_string(p2p::kStuckBitRanks - 1);
  return makeError(collTimeout, "a device barrier on rank {} timed out after {} ms: stuck: rank(s) {} (did not arrive)",
                   p_.rank, p_.timeoutMs, stuck);
}

size_t DeviceComm::channelOffset() const {
  return mailboxOffset() + p2p::p2pMailboxBytes(p_.nranks);
}

size_t DeviceComm::allocationBytes() const { return channelOffset() + kMaxChannels * kChannelStride; }

Status DeviceComm::agreeOnSettings(const HostAllGather& allGather) {
  // Ranks must pick the same kernel for the same call and cut it into the
  // same blocks (llBytes was checked against kLlMaxBytes where it was read).
  // The automatic channel count is the least, over ranks, of SMs / (2 x
  // ranks sharing that rank's GPU), so that every rank's blocks on a GPU fit
  // on it at once (a block waits at its barriers for the other ranks'
  // blocks) even with two launches per rank in flight — two communicators
  // on two streams: at SMs / ranks, the GPU test's crossed streams (3 ranks
  // on an H200, 32 blocks per launch) waited until the timeout.  One rank
  // per GPU still gets kMaxChannels.
  struct Mine {
    uint64_t llBytes, program, channels, sms, busHash;
  };
  int sms = 0;
  COLL_CHECK(cudaStatus(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, p_.device), "cudaDeviceGetAttribute"));
  uint64_t hash = 1469598103934665603ull;  // FNV-1a of the PCI bus id
  for (const char* c = peers_->busId(); *c != '\0'; ++c) hash = (hash ^ static_cast<unsigned char>(*c)) * 1099511628211ull;
  const Mine mine{p_.llBytes, static_cast<uint64_t>(p_.program), static_cast<uint64_t>(p_.channels),
                  static_cast<uint64_t>(sms), hash};
  const int n = p_.nranks;
  std::vector<Mine> all(n);
  COLL_CHECK(allGather(&mine, all.data(), sizeof mine));
  for (int r = 0; r < n; ++r) {
    if (all[r].llBytes != mine.llBytes)
      return makeError(collInvalidUsage, "COLL_DEVICE_LL_BYTES differs: rank {} has {}, rank {} has {} (it must match on "
                       "every rank)", r, all[r].llBytes, p_.rank, mine.llBytes);
    if (all[r].program != mine.program)
      return makeError(collInvalidUsage, "COLL_DEVICE_PROGRAM differs: rank {} has {}, rank {} has {} (it must match on "
                       "every rank)", r, programModeName(all[r].program), p_.rank, programModeName(mine.program));
    if (all[r].channels != mine.channels)
      return makeError(collInvalidUsage, "COLL_DEVICE_CHANNELS differs: rank {} has {}, rank {} has {} (it must match "
                       "on every rank)", r, all[r].channels, p_.rank, mine.channels);
  }
  // The blocks of every rank's launch on a GPU spin on each other, so all
  // of them must be resident at once: at most SMs / ranks sharing it (a
  // block fills an SM).  The default leaves room for two launches at once
  // (calls on two streams): SMs / (2 x sharing).
  uint64_t fit = kMaxChannels, resident = kMaxChannels;
  int tightest = 0;
  uint64_t tightestSharing = 1;
  for (int r = 0; r < n; ++r) {
    uint64_t sharing = 0;
    for (int q = 0; q < n; ++q) sharing += all[q].busHash == all[r].busHash ? 1 : 0;
    fit = std::min<uint64_t>(fit, all[r].sms / (2 * sharing));
    if (all[r].sms / sharing < resident) {
      resident = all[r].sms / sharing;
      tightest = r;
      tightestSharing = sharing;
    }
  }
  if (p_.channels > 0 && static_cast<uint64_t>(p_.channels) > std::max<uint64_t>(resident, 1))
    return makeError(collInvalidArgument, "COLL_DEVICE_CHANNELS={}: rank {}'s GPU ({} SMs) is shared by {} ranks, and "
                     "the program kernel's blocks of all of them must be resident at once (one block per SM), so at "
                     "most {} (the default, {}, leaves room for two launches at once)",
                     p_.channels, tightest, all[tightest].sms, tightestSharing, std::max<uint64_t>(resident, 1),
                     std::max<uint64_t>(fit, 1));
  channels_ = p_.channels > 0 ? std::min(p_.channels, kMaxChannels) : static_cast<int>(std::max<uint64_t>(fit, 1));
  return Status::ok();
}

Status DeviceComm::enqueueP2p(const std::vector<P2pOp>& ops, cudaStream_t s) {
  COLL_CHECK(asyncStatus());
  if (ops.size() > static_cast<size_t>(kP2pMaxOps))
    return makeError(collInvalidUsage, "{} device send/recv in one group; at most {} are supported", ops.size(), kP2pMaxOps);
  P2pLaunch l;
  l.nops = static_cast<int>(ops.size());
  for (size_t i = 0; i < ops.size(); ++i) l.ops[i] = ops[i];
  l.bases = peerBases_;
  l.ctlOffset = p2pControlOffset();
  l.mailOffset = mailboxOffset();
  l.nranks = p_.nranks;
  l.rank = p_.rank;
  l.timeoutNs = timeoutNs();
  l.error = devError_;
  // What a size mismatch reports (byte counts; peers and call numbers are
  // not carried).
  exec::Signature send, recv;
  send.coll = sched::CollKind::Send;
  recv.coll = sched::CollKind::Recv;
  send.dtype = recv.dtype = static_cast<uint8_t>(kernels::DType::Uint8);
  uint64_t words[2];
  if (exec::packSignature(send, words)) l.sendSigWord = words[0];
  if (exec::packSignature(recv, words)) l.recvSigWord = words[0];
  const CurrentDevice on(p_.device);
  COLL_CHECK(on.status());
  return order_.ordered(s, [&] { return cudaStatus(launchP2p(l, s), "device send/recv launch"); });
}

unsigned long long DeviceComm::timeoutNs() const {
  // timeoutMs 0 means no deadline (COLL_TIMEOUT=0).
  return p_.timeoutMs > 0 ? static_cast<unsigned long long>(p_.timeoutMs) * 1000000ull : ~0ull;
}

Status DeviceComm::barrier(cudaStream_t s) {
  return cudaStatus(launchBarrier(counter(), peerFlags_, p_.nranks, p_.rank, sig_, timeoutNs(), devError_, s),
                    "device barrier launch");
}

SmallAllReduceArgs DeviceComm::oneLaunchArgs(const DeviceOp& op, char** slots, size_t slotBytes) const {
  SmallAllReduceArgs a;
  a.send = op.send;
  a.recv = op.recv;
  a.count = op.count;
  a.fn = op.fn;
  a.deviceScalar = op.deviceScalar;
  a.slots = slots;
  a.slotBytes = slotBytes;
  a.counter = counter();
  a.flags = peerFlags_;
  a.nranks = p_.nranks;
  a.rank = p_.rank;
  a.timeoutNs = timeoutNs();
  a.error = devError_;
  a.sig = sig_;
  return a;
}

Status DeviceComm::smallAllReduce(const DeviceOp& op) {
  return cudaStatus(launchSmallAllReduce(oneLaunchArgs(op, smallSlots_, kSmallSlotBytes), op.stream),
                    "small all-reduce launch");
}

Status DeviceComm::llAllReduce(const DeviceOp& op) {
  return cudaStatus(launchLlAllReduce(oneLaunchArgs(op, llSlots_, kLlSlotBytes), op.stream), "LL all-reduce launch");
}

void DeviceComm::beginCall(const exec::Signature& s, uint64_t calls) {
  // Every barrier of this call carries its signature; a root too large to
  // pack is not compared (word 0).
  exec::Signature sig = s;
  sig.seq = seq_;
  seq_ += calls;
  uint64_t words[2];
  sig_ = exec::packSignature(sig, words) ? CallSig{words[0], words[1]} : CallSig{};
}

Status DeviceComm::smallGroup(const DeviceOp* ops, const std::vector<size_t>& offsets) {
  const size_t n = offsets.size(), es = kernels::dtypeSize(ops[0].fn.dtype);
  SmallSeg segs[kMaxSmallSegs];
  uint64_t total = 0;
  for (size_t i = 0; i < n; ++i) {
    segs[i].send = ops[i].send;
    segs[i].recv = ops[i].kind == sched::CollKind::Reduce && p_.rank != ops[i].root ? nullptr : ops[i].recv;
    segs[i].count = ops[i].count;
    segs[i].offset = offsets[i] / es;
    total += ops[i].count;
  }
  // The launch's signature: the first call's, with the group's total count.
  exec::Signature sig = ops[0].sig;
  sig.count = total;
  beginCall(sig, n);
  // The segments carry the buffers; the rest is the first call's.
  return cudaStatus(launchSmallAllReduceGroup(oneLaunchArgs(ops[0], smallSlots_, kSmallSlotBytes), segs,
                                              static_cast<int>(n), ops[0].stream),
                    "grouped small all-reduce launch");
}

bool DeviceComm::programUsable() const {
  return p_.program != ProgramMode::Off && p_.nranks >= 2 && p_.nranks <= kMaxProgramRanks;
}

sched::DeviceStreamShape DeviceComm::streamShape() const {
  sched::DeviceStreamShape shape;
  shape.nranks = p_.nranks;
  shape.regionBytes = p_.regionBytes;
  shape.oneLaunchBytes = kSmallSlotBytes;
  return shape;
}

uint64_t DeviceComm::streamOps(const DeviceOp& op) const {
  return sched::deviceStreamOps(groupCallOf(op, p_.rank, p_.nranks), streamShape());
}

bool DeviceComm::takesProgram(const DeviceOp& op) const {
  if (!programUsable()) return false;
  if (p_.program == ProgramMode::Auto) return sched::programByDefault(groupCallOf(op, p_.rank, p_.nranks), streamShape());
  const bool oneLaunchKind = op.kind == sched::CollKind::AllReduce || op.kind == sched::CollKind::Reduce;
  return !(oneLaunchKind && op.count * kernels::dtypeSize(op.fn.dtype) <= kSmallSlotBytes);
}

Status DeviceComm::runProgram(const DeviceOp* ops, size_t n) {
  std::vector<CallSig> sigs(n);
  for (size_t i = 0; i < n; ++i) {
    beginCall(ops[i].sig, 1);
    sigs[i] = sig_;
  }
  ProgramPlace at;
  at.rank = p_.rank;
  at.nranks = p_.nranks;
  at.channels = channels_;
  at.regionBytes = p_.regionBytes;
  at.bases = peerBases_;
  at.inputOffset = kControlBytes;
  at.resultOffset = kControlBytes + p_.regionBytes;
  at.channelOffset = channelOffset();
  at.timeoutNs = timeoutNs();
  at.error = devError_;
  at.control = reinterpret_cast<unsigned long long*>(peers_->local());
  launches_.clear();
  COLL_CHECK(buildProgramLaunches(at, ops, sigs.data(), n, &launches_));
  for (const ProgramLaunch& l : launches_)
    COLL_CHECK(cudaStatus(launchProgram(l, ops[0].stream), "device program launch"));
  return Status::ok();
}

Status DeviceComm::enqueueGroup(const std::vector<DeviceOp>& ops) {
  COLL_CHECK(asyncStatus());
  std::vector<sched::DeviceGroupCall> calls;
  for (const DeviceOp& op : ops) calls.push_back(groupCallOf(op, p_.rank, p_.nranks));
  const std::vector<sched::DeviceGroupRun> plan = sched::planDeviceGroup(calls, p_.nranks, kSmallSlotBytes, kMaxSmallSegs);
  bool program = false;
  if (programUsable() && !sched::groupWantsSmallKernel(calls, p_.nranks, kSmallSlotBytes)) {
    if (p_.program == ProgramMode::On) {
      program = true;
    } else {  // auto: when the plan's stream operations would pass the budget, or a call alone would take it
      uint64_t streamOpsOfPlan = 0;
      for (const sched::DeviceGroupRun& run : plan) {
        streamOpsOfPlan += run.fused ? 1 : streamOps(ops[run.first]);
        program = program || (!run.fused && takesProgram(ops[run.first]));
      }
      program = program || streamOpsOfPlan > sched::kDeviceStreamOpBudget;
    }
  }
  const CurrentDevice on(p_.device);
  COLL_CHECK(on.status());
  // Each run after the one before it, whatever its stream (StreamOrder).
  Status s = Status::ok();
  if (program) {
    for (const sched::DeviceGroupRun& run : sched::planProgramRuns(calls, kMaxProgramCalls)) {
      s = order_.ordered(ops[run.first].stream, [&] { return runProgram(ops.data() + run.first, run.calls); });
      if (!s.isOk()) break;
    }
  } else {
    for (const sched::DeviceGroupRun& run : plan) {
      s = order_.ordered(ops[run.first].stream, [&] {
        return run.fused ? smallGroup(ops.data() + run.first, run.offsets) : enqueueOne(ops[run.first]);
      });
      if (!s.isOk()) break;
    }
  }
  return s;
}

Status DeviceComm::joinStreams(const std::vector<cudaStream_t>& streams) {
  const CurrentDevice on(p_.device);
  COLL_CHECK(on.status());
  return order_.join(streams);
}

Status DeviceComm::oneLaunch(const DeviceOp& op, size_t bytes) {
  return bytes <= p_.llBytes ? llAllReduce(op) : smallAllReduce(op);
}

Status DeviceComm::copy(void* dst, const void* src, size_t bytes, cudaStream_t s) {
  if (bytes == 0 || dst == src) return Status::ok();
  return cudaStatus(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, s), "cudaMemcpyAsync");
}

Status DeviceComm::stageIn(const DeviceOp& op, const void* src, size_t at, size_t n) {
  const size_t es = kernels::dtypeSize(op.fn.dtype);
  char* dst = input(p_.rank) + at * es;
  if (!op.fn.premul) return copy(dst, src, n * es, op.stream);
  return cudaStatus(kernels::collDeviceReduce(op.fn, dst, nullptr, src, n, true, false, op.deviceScalar, op.stream),
                    "device pre-multiply");
}

Status DeviceComm::reduceChain(void* dst, bool fromResult, size_t at, size_t n, const kernels::ReduceFn& fn,
                               cudaStream_t s) {
  if (n == 0) return Status::ok();
  const size_t es = kernels::dtypeSize(fn.dtype);
  auto src = [&](int r) -> const char* { return (fromResult ? result(r) : input(r)) + at * es; };
  kernels::ReduceFn plain = fn;
  plain.premul = false;  // applied at stage-in
  if (p_.nranks == 1)
    return cudaStatus(kernels::collDeviceReduce(plain, dst, nullptr, src(0), n, false, true, nullptr, s), "device reduce");
  for (int r = 1; r < p_.nranks; ++r) {
    const void* a = r == 1 ? static_cast<const void*>(src(0)) : dst;
    const bool last = r == p_.nranks - 1;
    COLL_CHECK(cudaStatus(kernels::collDeviceReduce(plain, dst, a, src(r), n, false, last, nullptr, s), "device reduce"));
  }
  return Status::ok();
}

Status DeviceComm::enqueue(const DeviceOp& op) {
  COLL_CHECK(asyncStatus());
  const CurrentDevice on(p_.device);
  COLL_CHECK(on.status());
  return order_.ordered(op.stream, [&] { return enqueueOne(op); });
}

Status DeviceComm::enqueueOne(const DeviceOp& op) {
  if (takesProgram(op)) return runProgram(&op, 1);
  beginCall(op.sig, 1);
  switch (op.kind) {
    case sched::CollKind::AllReduce: return allReduce(op);
    case sched::CollKind::AllGather: return allGather(op);
    case sched::CollKind::Broadcast: return broadcast(op);
    case sched::CollKind::ReduceScatter: return reduceScatter(op);
    case sched::CollKind::Reduce: return reduce(op);
    default: return makeError(collInternalError, "device send/recv go through enqueueP2p");
  }
}

}  // namespace coll::device
