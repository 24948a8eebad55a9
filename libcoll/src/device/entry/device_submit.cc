// device_submit.cc — device_entry.h in CUDA builds: device calls to the
// device executor (the IPC path, device/device_comm.h), the local path
// (device_local.h) or the host-staged path (device_staged.h).
#include "device/entry/device_entry.h"

#include "core/buffer_kind.h"
#include "core/comm.h"
#include "device/entry/device_local.h"
#include "device/entry/device_staged.h"
#include "device/current_device.h"
#include "device/device_comm.h"
#include "device/kernel_loading.h"
#include "device/local_clique.h"
#include "device/program_kernel.h"
#include "coll/base/log.h"
#include "coll/base/settings.h"

#include <algorithm>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace coll::core {
namespace {

// The device path's settings (their ranges and defaults: the settings
// table, base/src/settings.cc; why the defaults are what they are:
// docs/PERFORMANCE.md, "CUDA device collectives").

Result<size_t> stageBytes() {
  auto v = settings::bytesOr("COLL_DEVICE_STAGE_BYTES");
  COLL_CHECK(v.status());
  if (v.value() % 256 != 0)
    return makeError(collInvalidArgument, "COLL_DEVICE_STAGE_BYTES={} must be a multiple of 256", v.value());
  return v.value();
}

// Up to this size all-reduces and reduces take the LL one-launch kernel (0: never).
Result<size_t> llBytes() {
  static_assert(device::kLlMaxBytes >= 16 * 1024, "the settings table allows COLL_DEVICE_LL_BYTES up to 16K");
  return settings::bytesOr("COLL_DEVICE_LL_BYTES");
}

// Which device calls above the one-launch size, and which groups, run as
// program-kernel launches (device/program_kernel.h): 1 all; auto those that
// would queue more stream operations than sched::kDeviceStreamOpBudget (a
// full stream blocks the caller) and those sched::programByDefault names;
// 0 none.
Result<device::ProgramMode> programMode() {
  auto v = settings::choiceOr("COLL_DEVICE_PROGRAM");
  COLL_CHECK(v.status());
  if (v.value() == "0") return device::ProgramMode::Off;
  if (v.value() == "1") return device::ProgramMode::On;
  return device::ProgramMode::Auto;
}

// The program kernel's blocks per launch; 0: SMs / ranks on the GPU.
Result<int> programChannels() {
  static_assert(device::kMaxChannels == 64, "the settings table allows COLL_DEVICE_CHANNELS up to 64");
  auto v = settings::intOr("COLL_DEVICE_CHANNELS");
  COLL_CHECK(v.status());
  return static_cast<int>(v.value());
}

// auto: IPC when every rank can map every peer, else staged; ipc (refuse
// otherwise); staged (always through the host).
Result<std::string> devicePath() { return settings::choiceOr("COLL_DEVICE_PATH"); }

bool deviceReady(const collComm* comm) { return comm->device || comm->deviceStaged || comm->clique; }

// Every rank in this process: the local path (device/local_clique.h),
// unless COLL_DEVICE_PATH names another.  Ranks of one process sharing a
// GPU have no other safe path.  Sets nothing when another path is to run.
Status chooseLocalPath(collComm* comm, const OpRequest& r, const RankPlacement& where, const std::string& path) {
  if (!where.sharedGpu.empty() && !(where.allHere && path == "auto"))
    return makeError(collInvalidUsage,
                     "{}: {}{}: kernels of one process that wait for each other can deadlock (CUDA may queue their "
                     "streams one behind the other); {}", r.api, where.sharedGpu,
                     where.allHere ? "" : " while other ranks are in other processes",
                     where.allHere ? "unset COLL_DEVICE_PATH=" + path + " (auto takes the local path)"
                                   : std::string("run one process per rank, or all ranks in one process"));
  if (!where.allHere || path != "auto" || comm->nranks == 1) return Status::ok();
  Result<size_t> bytes = stageBytes();
  COLL_CHECK(bytes.status());
  bool noPeerAccess = false;
  Status s = joinLocalClique(comm, where, bytes.value(), &noPeerAccess);
  if (!s.isOk() && noPeerAccess && where.sharedGpu.empty()) {
    comm->deviceStaged = true;  // every rank saw the same verdict
    COLL_LOG(Info, kInit, comm->rank, "device calls take the host-staged path: {}", s.message());
    return Status::ok();
  }
  COLL_CHECK(s);
  COLL_LOG(Info, kInit, comm->rank, "device calls take the local path (every rank in this process)");
  return Status::ok();
}

// The communicator's device state, made at its first device call (a
// collective step: every rank makes its first device call at the same
// point, as with any collective; inside a group, at its end).
Status ensureDevice(collComm* comm, const OpRequest& r, int device) {
  if (!deviceReady(comm)) {
    // Before any kernel of this communicator runs anywhere: its ranks are
    // all at this call (device/kernel_loading.h).
    COLL_CHECK(device::loadKernels(device));
    Result<std::string> path = devicePath();
    COLL_CHECK(path.status());
    Result<RankPlacement> where = placeRanks(comm, device);
    COLL_CHECK(where.status());
    COLL_CHECK(chooseLocalPath(comm, r, where.value(), path.value()));
    if (deviceReady(comm)) return Status::ok();
    if (path.value() == "staged" || (!comm->allLocal && path.value() == "auto")) {
      comm->deviceStaged = true;
      COLL_LOG(Info, kInit, comm->rank, "device calls take the host-staged path ({})",
               path.value() == "staged" ? "COLL_DEVICE_PATH=staged" : "ranks on other hosts");
      return Status::ok();
    }
    if (!comm->allLocal)
      return makeError(collInvalidUsage, "{}: COLL_DEVICE_PATH=ipc needs every rank on this host", r.api);
    Result<size_t> bytes = stageBytes();
    COLL_CHECK(bytes.status());
    Result<size_t> ll = llBytes();
    COLL_CHECK(ll.status());
    Result<device::ProgramMode> program = programMode();
    COLL_CHECK(program.status());
    Result<int> channels = programChannels();
    COLL_CHECK(channels.status());
    device::DeviceCommParams p;
    p.rank = comm->rank;
    p.nranks = comm->nranks;
    p.device = device;
    p.regionBytes = bytes.value();
    p.llBytes = ll.value();
    p.program = program.value();
    p.channels = channels.value();
    p.timeoutMs = comm->timeoutMs;
    auto exchange = [comm](const void* mine, void* all, size_t n) {
      OpRequest ag{"device setup (all-gather of IPC handles)", sched::CollKind::AllGather, mine, all, n, collUint8,
                   collSum, -1};
      return runHostNow(comm, ag);
    };
    bool unreachable = false;
    auto made = device::DeviceComm::create(p, exchange, &unreachable);
    if (!made.isOk() && unreachable && path.value() == "auto") {
      comm->deviceStaged = true;  // every rank saw the same verdict
      COLL_LOG(Info, kInit, comm->rank, "device calls take the host-staged path: {}", made.status().message());
      return Status::ok();
    }
    COLL_CHECK(made.status());
    comm->device = std::move(made.value());
  }
  const int home = comm->device ? comm->device->device() : comm->clique ? comm->clique->device(comm->rank) : device;
  if (device != home)
    return makeError(collInvalidArgument, "{}: the buffers are on GPU {} but this communicator's device collectives "
                     "run on GPU {} (its first device call's)", r.api, device, home);
  return Status::ok();
}

// Device send/recv inside collGroupStart/End: launched together at the end.
struct QueuedP2p {
  collComm* comm;
  device::P2pOp op;
  OpRequest request;  // for the host-staged path
  cudaStream_t stream;
};
thread_local std::vector<QueuedP2p> tGroupP2p;

// Device collectives inside collGroupStart/End (IPC path): enqueued at the
// end, so that a group's small ones share a launch.
struct QueuedColl {
  collComm* comm;
  device::DeviceOp op;
};
thread_local std::vector<QueuedColl> tGroupColl;

// The communicators of `items` (comm(item) each), in first-seen order.
template <class T, class Comm>
std::vector<collComm*> commsOf(const std::vector<T>& items, Comm comm) {
  std::vector<collComm*> out;
  for (const T& item : items)
    if (std::find(out.begin(), out.end(), comm(item)) == out.end()) out.push_back(comm(item));
  return out;
}

// Every (communicator, stream) a group's device calls used, staged ones
// included: at the end each stream waits for the whole group.
thread_local std::vector<std::pair<collComm*, cudaStream_t>> tGroupStreams;

void noteGroupStream(collComm* comm, cudaStream_t s) {
  const std::pair<collComm*, cudaStream_t> key{comm, s};
  if (std::find(tGroupStreams.begin(), tGroupStreams.end(), key) == tGroupStreams.end()) tGroupStreams.push_back(key);
}

// Each communicator whose group calls used several streams: all of them
// wait for its last call.
Status joinGroupStreams() {
  std::vector<std::pair<collComm*, cudaStream_t>> used = std::move(tGroupStreams);
  tGroupStreams.clear();
  for (collComm* c : commsOf(used, [](const auto& u) { return u.first; })) {
    std::vector<cudaStream_t> streams;
    for (const auto& u : used)
      if (u.first == c) streams.push_back(u.second);
    if (streams.size() < 2) continue;
    COLL_CHECK(c->clique         ? c->clique->joinStreams(c->rank, streams)
               : c->deviceStaged ? joinStagedStreams(c, streams)
                                 : c->device->joinStreams(streams));
  }
  return Status::ok();
}

}  // namespace

namespace {

// Device calls inside a group on communicators not set up yet: set up at the
// group's end (one thread may drive several ranks of one communicator, and
// the setup is collective), then submitted in call order.
struct Deferred {
  collComm* comm;
  OpRequest request;
};
thread_local std::vector<Deferred> tGroupDeferred;

int deviceOf(collComm* comm, const OpRequest& r) {
  const Ranges g = rangesOf(r, comm->rank, comm->nranks);
  return bufferKind(g.inElems > 0 ? r.sendbuf : r.recvbuf).device;
}

// Posts a local-path call and waits until every rank of the process has
// made it and it is enqueued (device/local_clique.h).
Status runLocal(collComm* comm, Status posted) {
  COLL_CHECK(posted);
  return comm->clique->await(comm->rank, comm->aborted);
}

Status submitReady(collComm* comm, const OpRequest& r, bool grouped) {
  COLL_CHECK(ensureDevice(comm, r, deviceOf(comm, r)));
  const auto stream = static_cast<cudaStream_t>(r.stream);
  const bool p2p = r.kind == sched::CollKind::Send || r.kind == sched::CollKind::Recv;
  if (grouped) noteGroupStream(comm, stream);
  if (p2p && r.root == comm->rank && !grouped)
    return makeError(collInvalidUsage, "{} to/from itself (peer {}) needs its matching call in the same "
                     "collGroupStart/End", r.api, r.root);
  if (comm->deviceStaged && !(p2p && grouped)) return enqueueStaged(comm, {r}, stream);
  if (p2p) {
    device::P2pOp op;
    op.isSend = r.kind == sched::CollKind::Send;
    op.buf = op.isSend ? const_cast<void*>(r.sendbuf) : r.recvbuf;
    op.bytes = r.count * kernels::dtypeSize(static_cast<kernels::DType>(r.dtype));
    op.peer = r.root;
    if (grouped) {
      tGroupP2p.push_back({comm, op, r, stream});
      return Status::ok();
    }
    if (comm->clique) return runLocal(comm, comm->clique->postP2p(comm->rank, {op}, stream));
    return comm->device->enqueueP2p({op}, stream);
  }
  device::DeviceOp op;
  op.kind = r.kind;
  op.send = r.sendbuf;
  op.recv = r.recvbuf;
  op.count = r.count;
  op.root = r.root;
  if (sched::reduces(r.kind)) op.fn = reduceFnOf(comm, r, &op.deviceScalar);
  else op.fn.dtype = static_cast<kernels::DType>(r.dtype);
  op.stream = stream;
  op.sig.coll = r.kind;
  op.sig.count = r.count;
  op.sig.dtype = static_cast<uint8_t>(r.dtype);
  op.sig.op = sched::reduces(r.kind) ? opKindOf(r.op) : exec::OpKind::None;
  op.sig.root = r.root;
  if (grouped) {
    tGroupColl.push_back({comm, op});
    return Status::ok();
  }
  if (comm->clique) return runLocal(comm, comm->clique->postCollective(comm->rank, op));
  return comm->device->enqueue(op);
}

// The deferred calls' communicators set up — at once, a thread each when
// there are several: their setups are collectives that may meet each other
// — then their calls submitted as group calls.
Status setUpDeferred() {
  std::vector<Deferred> deferred = std::move(tGroupDeferred);
  tGroupDeferred.clear();
  const std::vector<collComm*> comms = commsOf(deferred, [](const Deferred& d) { return d.comm; });
  std::vector<Status> results(comms.size(), Status::ok());
  auto setUp = [&](size_t i) {
    try {
      for (const Deferred& d : deferred)
        if (d.comm == comms[i]) {
          results[i] = ensureDevice(d.comm, d.request, deviceOf(d.comm, d.request));
          return;
        }
    } catch (const std::exception& e) {
      results[i] = makeError(collInternalError, "internal error: {}", e.what());
    }
  };
  if (comms.size() == 1) {
    setUp(0);
  } else {
    std::vector<std::thread> threads;
    for (size_t i = 0; i < comms.size(); ++i) threads.emplace_back(setUp, i);
    for (std::thread& t : threads) t.join();
  }
  for (const Status& st : results) COLL_CHECK(st);
  for (const Deferred& d : deferred) COLL_CHECK(submitReady(d.comm, d.request, true));
  return Status::ok();
}

}  // namespace

Status submitDevice(collComm* comm, const OpRequest& r) {
  if (inGroup() && !deviceReady(comm)) {
    tGroupDeferred.push_back({comm, r});  // r.preMul: the op as it is now (it may be gone by the end)
    return Status::ok();
  }
  return submitReady(comm, r, inGroup());
}

Status deviceAsyncFailure(collComm* comm) {
  if (comm->clique) return comm->clique->status();
  if (!comm->device) return Status::ok();
  return comm->device->asyncStatus();
}

namespace {

// One communicator's send/recv of a group, checked.
struct P2pBatch {
  collComm* comm = nullptr;
  std::vector<device::P2pOp> ops;
  std::vector<OpRequest> requests;  // for the host-staged path
  cudaStream_t stream = nullptr;
};

Result<std::vector<P2pBatch>> p2pBatches(const std::vector<QueuedP2p>& queued) {
  std::vector<P2pBatch> out;
  for (collComm* c : commsOf(queued, [](const QueuedP2p& q) { return q.comm; })) {
    P2pBatch b;
    b.comm = c;
    bool first = true;
    int selfSends = 0, selfRecvs = 0;
    for (const QueuedP2p& q : queued) {
      if (q.comm != c) continue;
      if (!first && q.stream != b.stream)
        return makeError(collInvalidUsage, "rank {}: device send/recv of one group use different streams; use one "
                         "stream per communicator in a group", c->rank);
      first = false;
      b.stream = q.stream;
      if (q.op.peer == c->rank) (q.op.isSend ? selfSends : selfRecvs) += 1;
      b.ops.push_back(q.op);
      b.requests.push_back(q.request);
    }
    if (selfSends != selfRecvs)
      return makeError(collInvalidUsage, "rank {}: {} device collSend to itself but {} collRecv from itself in one group",
                       c->rank, selfSends, selfRecvs);
    out.push_back(std::move(b));
  }
  return out;
}

Status flushDeviceCalls() {
  // The group's collectives first, in call order per communicator (they
  // were enqueued at call time before groups fused them), then its
  // send/recv; everything checked before anything is enqueued.
  std::vector<QueuedColl> colls = std::move(tGroupColl);
  tGroupColl.clear();
  std::vector<QueuedP2p> queued = std::move(tGroupP2p);
  tGroupP2p.clear();
  Result<std::vector<P2pBatch>> batches = p2pBatches(queued);
  COLL_CHECK(batches.status());
  // Local-path calls are posted first and waited for at the end: this
  // thread may be making the calls of every rank of the process.
  std::vector<collComm*> local;
  auto noteLocal = [&](collComm* c) {
    if (std::find(local.begin(), local.end(), c) == local.end()) local.push_back(c);
  };
  Status status = Status::ok();
  for (collComm* c : commsOf(colls, [](const QueuedColl& q) { return q.comm; })) {
    std::vector<device::DeviceOp> ops;
    for (const QueuedColl& q : colls)
      if (q.comm == c) ops.push_back(q.op);
    Status s = Status::ok();
    if (c->clique) {
      noteLocal(c);
      for (size_t i = 0; i < ops.size() && s.isOk(); ++i) s = c->clique->postCollective(c->rank, ops[i]);
    } else {
      s = c->device->enqueueGroup(ops);
    }
    if (status.isOk()) status = s;
  }
  // One launch per communicator, with all its group's send/recv.
  for (size_t i = 0; i < batches.value().size() && status.isOk(); ++i) {
    const P2pBatch& b = batches.value()[i];
    collComm* c = b.comm;
    if (c->clique) noteLocal(c);
    status = c->clique         ? c->clique->postP2p(c->rank, b.ops, b.stream)
             : c->deviceStaged ? enqueueStaged(c, b.requests, b.stream)
                               : c->device->enqueueP2p(b.ops, b.stream);
  }
  for (collComm* c : local) {
    Status s = c->clique->await(c->rank, c->aborted);
    if (status.isOk()) status = s;
  }
  return status;
}

}  // namespace

Status flushDeviceGroup() {
  // The group's device communicators, for its failure's message on each.
  std::vector<collComm*> comms = commsOf(tGroupDeferred, [](const Deferred& d) { return d.comm; });
  auto note = [&](collComm* c) {
    if (std::find(comms.begin(), comms.end(), c) == comms.end()) comms.push_back(c);
  };
  for (const QueuedColl& q : tGroupColl) note(q.comm);
  for (const QueuedP2p& q : tGroupP2p) note(q.comm);
  Status s = setUpDeferred();
  if (s.isOk()) {
    s = flushDeviceCalls();
  } else {  // the group fails whole: none of its device calls is made
    tGroupColl.clear();
    tGroupP2p.clear();
  }
  // Even after a failure: the streams of the calls enqueued still wait.
  const Status joined = joinGroupStreams();
  if (!s.isOk())
    for (collComm* c : comms) (void)fail(c, s);  // collGetLastError(comm) says it on every one
  return s.isOk() ? joined : s;
}

void teardownDevice(collComm* comm) {
  if (comm->clique) {
    // Nothing of this rank's is read by a peer's kernel (the local path
    // works on the ranks' own buffers, from the shared clique, freed with
    // its last rank): no barrier, so one thread may destroy every rank.
    comm->clique->leave(comm->rank);
    comm->clique.reset();
  }
  if (!comm->device && !comm->staged) return;
  // The communicator's device work done, on its device (the caller may have
  // another one current).
  if (comm->device) {
    const device::CurrentDevice on(comm->device->device());
    if (on.status().isOk()) (void)cudaDeviceSynchronize();
  }
  releaseStaging(comm);
  if (!comm->device) return;
  const Status device = comm->device->asyncStatus();
  if (!comm->aborted.load() && comm->asyncError.load() == collSuccess && device.isOk()) {
    unsigned char mine = 1;
    std::vector<unsigned char> all(comm->nranks);
    OpRequest ag{"device teardown (barrier)", sched::CollKind::AllGather, &mine, all.data(), 1, collUint8, collSum, -1};
    (void)runHostNow(comm, ag);  // a failure here only means a peer is gone
  } else if (comm->transport) {
    // A failed rank skips that barrier, and its peers whose communicator is
    // healthy (they never joined the call that failed: a timeout, a
    // mismatch found on this side) wait for it there.  A failure on the
    // device tells no peer by itself (the host executor's does): tell them
    // now, so that their teardown ends at once and not at their timeout.
    std::string why = device.message();  // the first device failure, else the last call's error
    if (device.isOk()) {
      std::lock_guard<std::mutex> lock(comm->errorMu);
      why = comm->lastError.empty() ? "communicator aborted" : comm->lastError;
    }
    comm->transport->notifyPeers("destroyed its failed communicator (" + why + ")");
  }
  comm->device.reset();
}

}  // namespace coll::core
