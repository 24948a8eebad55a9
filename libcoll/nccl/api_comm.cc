// api_comm.cc — NCCL's communicator calls on libcoll's (coll.h): versions
// and errors, inits (in a group or not), split, finalize/destroy/abort,
// queries, memory and registration.
#include <cstddef>
#include <cstring>
#include <optional>
#include <string>
#include <vector>

#include "api_guard.h"
#include "cuda_bridge.h"
#include "group.h"
#include "result_map.h"
#include "split_plan.h"

using coll::Status;
using coll::makeError;
using namespace coll::nccl;

static_assert(sizeof(ncclUniqueId) == sizeof(collUniqueId), "NCCL's unique id must hold libcoll's");
static_assert(sizeof(ncclRedOp_t) == sizeof(collRedOp_t) && sizeof(ncclDataType_t) == sizeof(collDataType_t));

namespace {

constexpr unsigned kConfigMagic = 0xcafebeef;

// What libcoll takes from an ncclConfig_t (copied: an init queued in a
// group runs after the caller's config may be gone).
struct CommOptions {
  std::optional<std::string> name;
};

// Fields past config->size are the caller's build's absent ones: defaults.
#define NCCL_CONFIG_HAS(cfg, field) ((cfg)->size >= offsetof(ncclConfig_t, field) + sizeof((cfg)->field))

coll::Result<CommOptions> readConfig(const ncclConfig_t* cfg, const char* api) {
  CommOptions o;
  if (cfg == nullptr) return o;
  if (cfg->magic != kConfigMagic)
    return makeError(collInvalidArgument, "{}: config was not set from NCCL_CONFIG_INITIALIZER (magic {:#x})", api,
                     cfg->magic);
  if (NCCL_CONFIG_HAS(cfg, blocking) && cfg->blocking != NCCL_CONFIG_UNDEF_INT && cfg->blocking != 0 &&
      cfg->blocking != 1)
    return makeError(collInvalidArgument, "{}: config->blocking {} is not 0 or 1", api, cfg->blocking);
  // blocking = 0 is accepted: every call here completes (or is enqueued on
  // its stream) before it returns, which a non-blocking communicator allows.
  if (NCCL_CONFIG_HAS(cfg, commName) && cfg->commName != nullptr) o.name = std::string(cfg->commName);
  return o;
}

collUniqueId toColl(const ncclUniqueId& id) {
  collUniqueId c;
  std::memcpy(&c, &id, sizeof c);
  return c;
}

Status initInto(ncclComm* h, int nranks, const collUniqueId& id, int rank, const CommOptions& o) {
  collConfig_t cfg = COLL_CONFIG_INITIALIZER;
  if (o.name) cfg.commName = o.name->c_str();
  collComm_t c = nullptr;
  COLL_CHECK(collStatus(nullptr, collCommInitRankConfig(&c, nranks, id, rank, &cfg)));
  h->coll.store(c);
  return Status::ok();
}

// An init: at once, or at the outermost ncclGroupEnd when inside a group.
Status startInit(ncclComm_t* out, int nranks, const collUniqueId& id, int rank, const ncclConfig_t* config,
                 const char* api) {
  if (out == nullptr) return makeError(collInvalidArgument, "{}: comm is NULL", api);
  auto o = readConfig(config, api);
  COLL_CHECK(o.status());
  ncclComm* h = newHandle(currentCudaDevice());
  if (inGroup()) {
    queueCreation(h, h->cudaDevice, [h, nranks, id, rank, opt = o.value()] { return initInto(h, nranks, id, rank, opt); });
    *out = h;
    return Status::ok();
  }
  Status s = initInto(h, nranks, id, rank, o.value());
  if (!s.isOk()) {
    discard(h);
    return s;
  }
  *out = h;
  return Status::ok();
}

// ncclCommSplit's work, on the parent's host-buffer all-gathers: every rank's
// (color, key), then the unique id each new communicator's first rank made.
Status splitInto(ncclComm* parent, ncclComm* child, int color, int key, const CommOptions& o) {
  auto lease = acquire(parent, "ncclCommSplit", true);
  COLL_CHECK(lease.status());
  collComm_t pc = lease.value().coll();
  int nranks = 0, rank = 0;
  COLL_CHECK(collStatus(pc, collCommCount(pc, &nranks)));
  COLL_CHECK(collStatus(pc, collCommUserRank(pc, &rank)));
  int mine[2] = {color, key};
  std::vector<int> all(2 * static_cast<size_t>(nranks));
  COLL_CHECK(collStatus(pc, collAllGather(mine, all.data(), 2, collInt32, pc, nullptr)));
  std::vector<SplitMember> members(nranks);
  for (int r = 0; r < nranks; r++) {
    members[r] = {all[2 * r], all[2 * r + 1]};
    if (members[r].color < NCCL_SPLIT_NOCOLOR)
      return makeError(collInvalidArgument, "ncclCommSplit: rank {} gave color {} (>= 0 or NCCL_SPLIT_NOCOLOR)", r,
                       members[r].color);
  }
  SplitPlace place = placeInSplit(members, rank);
  collUniqueId myId{};
  // A one-rank communicator meets nobody: a root made for it would wait out
  // the whole timeout on a thread, holding a port.
  if (place.newRank == 0 && place.newSize > 1) COLL_CHECK(collStatus(nullptr, collGetUniqueId(&myId)));
  std::vector<collUniqueId> ids(nranks);
  COLL_CHECK(collStatus(pc, collAllGather(&myId, ids.data(), sizeof myId, collUint8, pc, nullptr)));
  if (place.newRank < 0) return Status::ok();  // NCCL_SPLIT_NOCOLOR: in no new communicator
  return initInto(child, place.newSize, ids[place.leader], place.newRank, o);
}

}  // namespace

NCCL_EXPORT ncclResult_t ncclGetVersion(int* version) {
  return guard(nullptr, [&]() -> Status {
    if (version == nullptr) return makeError(collInvalidArgument, "ncclGetVersion: version is NULL");
    *version = NCCL_VERSION_CODE;
    return Status::ok();
  });
}
NCCL_PROFILING_ALIAS(ncclGetVersion)

NCCL_EXPORT const char* ncclGetErrorString(ncclResult_t result) { return errorString(result); }
NCCL_PROFILING_ALIAS(ncclGetErrorString)

NCCL_EXPORT const char* ncclGetLastError(ncclComm_t comm) { return lastError(comm); }
NCCL_PROFILING_ALIAS(ncclGetLastError)

NCCL_EXPORT ncclResult_t ncclGetUniqueId(ncclUniqueId* uniqueId) {
  return guard(nullptr, [&]() -> Status {
    if (uniqueId == nullptr) return makeError(collInvalidArgument, "ncclGetUniqueId: uniqueId is NULL");
    collUniqueId id;
    COLL_CHECK(collStatus(nullptr, collGetUniqueId(&id)));
    std::memcpy(uniqueId, &id, sizeof id);
    return Status::ok();
  });
}
NCCL_PROFILING_ALIAS(ncclGetUniqueId)

NCCL_EXPORT ncclResult_t ncclCommInitRankConfig(ncclComm_t* comm, int nranks, ncclUniqueId commId, int rank,
                                                ncclConfig_t* config) {
  return guard(nullptr, [&] { return startInit(comm, nranks, toColl(commId), rank, config, "ncclCommInitRankConfig"); });
}
NCCL_PROFILING_ALIAS(ncclCommInitRankConfig)

NCCL_EXPORT ncclResult_t ncclCommInitRank(ncclComm_t* comm, int nranks, ncclUniqueId commId, int rank) {
  return guard(nullptr, [&] { return startInit(comm, nranks, toColl(commId), rank, nullptr, "ncclCommInitRank"); });
}
NCCL_PROFILING_ALIAS(ncclCommInitRank)

// Every rank is given every id; libcoll needs one rendezvous, the first.
NCCL_EXPORT ncclResult_t ncclCommInitRankScalable(ncclComm_t* newcomm, int nranks, int myrank, int nId,
                                                  ncclUniqueId* commIds, ncclConfig_t* config) {
  return guard(nullptr, [&]() -> Status {
    if (nId < 1 || commIds == nullptr)
      return makeError(collInvalidArgument, "ncclCommInitRankScalable: nId {} must be >= 1 with commIds not NULL", nId);
    return startInit(newcomm, nranks, toColl(commIds[0]), myrank, config, "ncclCommInitRankScalable");
  });
}
NCCL_PROFILING_ALIAS(ncclCommInitRankScalable)

NCCL_EXPORT ncclResult_t ncclCommInitAll(ncclComm_t* comms, int ndev, const int* devlist) {
  return guard(nullptr, [&]() -> Status {
    if (comms == nullptr) return makeError(collInvalidArgument, "ncclCommInitAll: comms is NULL");
    if (ndev < 1) return makeError(collInvalidArgument, "ncclCommInitAll: ndev {} must be >= 1", ndev);
    if (devlist != nullptr)
      for (int i = 0; i < ndev; i++)
        if (devlist[i] < 0) return makeError(collInvalidArgument, "ncclCommInitAll: devlist[{}] = {}", i, devlist[i]);
    std::vector<collComm_t> cs(ndev);
    COLL_CHECK(collStatus(nullptr, collCommInitAll(cs.data(), ndev, devlist)));
    for (int i = 0; i < ndev; i++) {
      comms[i] = newHandle(devlist != nullptr ? devlist[i] : i);
      comms[i]->coll.store(cs[i]);
    }
    return Status::ok();
  });
}
NCCL_PROFILING_ALIAS(ncclCommInitAll)

NCCL_EXPORT ncclResult_t ncclCommSplit(ncclComm_t comm, int color, int key, ncclComm_t* newcomm,
                                       ncclConfig_t* config) {
  return guard(comm, [&]() -> Status {
    if (newcomm == nullptr) return makeError(collInvalidArgument, "ncclCommSplit: newcomm is NULL");
    if (color < NCCL_SPLIT_NOCOLOR)
      return makeError(collInvalidArgument, "ncclCommSplit: color {} (>= 0 or NCCL_SPLIT_NOCOLOR)", color);
    auto o = readConfig(config, "ncclCommSplit");
    COLL_CHECK(o.status());
    {
      auto check = acquire(comm, "ncclCommSplit", true);
      COLL_CHECK(check.status());
    }
    *newcomm = nullptr;
    if (inGroup()) {
      // A NCCL_SPLIT_NOCOLOR rank gets no handle but still takes part.
      ncclComm* child = color == NCCL_SPLIT_NOCOLOR ? nullptr : newHandle(comm->cudaDevice);
      queueCreation(child, comm->cudaDevice,
                    [comm, child, color, key, opt = o.value()] { return splitInto(comm, child, color, key, opt); });
      *newcomm = child;
      return Status::ok();
    }
    ncclComm* child = newHandle(comm->cudaDevice);
    Status s = splitInto(comm, child, color, key, o.value());
    if (!s.isOk() || child->coll.load() == nullptr) {
      discard(child);
      return s;
    }
    *newcomm = child;
    return Status::ok();
  });
}
NCCL_PROFILING_ALIAS(ncclCommSplit)

NCCL_EXPORT ncclResult_t ncclCommShrink(ncclComm_t comm, int* excludeRanksList, int excludeRanksCount,
                                        ncclComm_t* newcomm, ncclConfig_t* config, int shrinkFlags) {
  (void)excludeRanksList, (void)excludeRanksCount, (void)config, (void)shrinkFlags;
  return guard(comm, [&]() -> Status {
    if (newcomm != nullptr) *newcomm = nullptr;
    return makeError(collInvalidUsage,
                     "ncclCommShrink: not supported by libcoll (the survivors cannot meet without a collective of the "
                     "parent); make a new communicator with ncclGetUniqueId + ncclCommInitRank instead");
  });
}
NCCL_PROFILING_ALIAS(ncclCommShrink)

// libcoll's calls are complete (host buffers) or enqueued on their streams
// (device buffers) when they return; nothing is left to flush.  After it,
// the communicator takes no more operations.
NCCL_EXPORT ncclResult_t ncclCommFinalize(ncclComm_t comm) {
  return guard(comm, [&]() -> Status {
    auto lease = acquire(comm, "ncclCommFinalize", true);
    COLL_CHECK(lease.status());
    comm->finalized.store(true);
    return Status::ok();
  });
}
NCCL_PROFILING_ALIAS(ncclCommFinalize)

NCCL_EXPORT ncclResult_t ncclCommDestroy(ncclComm_t comm) {
  if (comm == nullptr) return ncclSuccess;  // as NCCL
  return guard(comm, [&]() -> Status {
    auto c = retire(comm, "ncclCommDestroy");
    COLL_CHECK(c.status());
    if (c.value() == nullptr) return Status::ok();  // its init failed: nothing else to free
    return collStatus(nullptr, collCommDestroy(c.value()));
  });
}
NCCL_PROFILING_ALIAS(ncclCommDestroy)

// Any thread, any time: calls inside the communicator return promptly
// (collCommAbort), then it is freed.
NCCL_EXPORT ncclResult_t ncclCommAbort(ncclComm_t comm) {
  if (comm == nullptr) return ncclSuccess;  // as NCCL
  return guard(comm, [&]() -> Status {
    {
      auto lease = acquire(comm, "ncclCommAbort", false);
      if (lease.isOk()) COLL_CHECK(collStatus(lease.value().coll(), collCommAbort(lease.value().coll())));
    }
    auto c = retire(comm, "ncclCommAbort");
    COLL_CHECK(c.status());
    if (c.value() == nullptr) return Status::ok();
    return collStatus(nullptr, collCommDestroy(c.value()));
  });
}
NCCL_PROFILING_ALIAS(ncclCommAbort)

// Ongoing and later operations fail (collCommAbort); the handle stays until
// ncclCommDestroy.
NCCL_EXPORT ncclResult_t ncclCommRevoke(ncclComm_t comm, int revokeFlags) {
  return guard(comm, [&]() -> Status {
    if (revokeFlags != NCCL_REVOKE_DEFAULT)
      return makeError(collInvalidArgument, "ncclCommRevoke: revokeFlags {} must be NCCL_REVOKE_DEFAULT", revokeFlags);
    auto lease = acquire(comm, "ncclCommRevoke", false);
    COLL_CHECK(lease.status());
    return collStatus(lease.value().coll(), collCommAbort(lease.value().coll()));
  });
}
NCCL_PROFILING_ALIAS(ncclCommRevoke)

NCCL_EXPORT ncclResult_t ncclCommGetAsyncError(ncclComm_t comm, ncclResult_t* asyncError) {
  return guard(comm, [&]() -> Status {
    if (asyncError == nullptr) return makeError(collInvalidArgument, "ncclCommGetAsyncError: asyncError is NULL");
    auto lease = acquire(comm, "ncclCommGetAsyncError", false);
    COLL_CHECK(lease.status());
    collResult_t r = collSuccess;
    COLL_CHECK(collStatus(lease.value().coll(), collCommGetAsyncError(lease.value().coll(), &r)));
    *asyncError = toNccl(r);
    return Status::ok();
  });
}
NCCL_PROFILING_ALIAS(ncclCommGetAsyncError)

NCCL_EXPORT ncclResult_t ncclCommCount(const ncclComm_t comm, int* count) {
  return guard(comm, [&]() -> Status {
    if (count == nullptr) return makeError(collInvalidArgument, "ncclCommCount: count is NULL");
    auto lease = acquire(comm, "ncclCommCount", false);
    COLL_CHECK(lease.status());
    return collStatus(lease.value().coll(), collCommCount(lease.value().coll(), count));
  });
}
NCCL_PROFILING_ALIAS(ncclCommCount)

NCCL_EXPORT ncclResult_t ncclCommUserRank(const ncclComm_t comm, int* rank) {
  return guard(comm, [&]() -> Status {
    if (rank == nullptr) return makeError(collInvalidArgument, "ncclCommUserRank: rank is NULL");
    auto lease = acquire(comm, "ncclCommUserRank", false);
    COLL_CHECK(lease.status());
    return collStatus(lease.value().coll(), collCommUserRank(lease.value().coll(), rank));
  });
}
NCCL_PROFILING_ALIAS(ncclCommUserRank)

NCCL_EXPORT ncclResult_t ncclCommCuDevice(const ncclComm_t comm, int* device) {
  return guard(comm, [&]() -> Status {
    if (device == nullptr) return makeError(collInvalidArgument, "ncclCommCuDevice: device is NULL");
    auto lease = acquire(comm, "ncclCommCuDevice", false);
    COLL_CHECK(lease.status());
    if (comm->cudaDevice < 0)
      return makeError(collInvalidUsage, "ncclCommCuDevice: no CUDA device was current when the communicator was made");
    *device = comm->cudaDevice;
    return Status::ok();
  });
}
NCCL_PROFILING_ALIAS(ncclCommCuDevice)

NCCL_EXPORT ncclResult_t ncclMemAlloc(void** ptr, size_t size) {
  return guard(nullptr, [&]() -> Status {
    if (ptr == nullptr) return makeError(collInvalidArgument, "ncclMemAlloc: ptr is NULL");
    if (size == 0) return makeError(collInvalidArgument, "ncclMemAlloc: size is 0");
    return cudaAlloc(ptr, size);
  });
}
NCCL_PROFILING_ALIAS(ncclMemAlloc)

NCCL_EXPORT ncclResult_t ncclMemFree(void* ptr) {
  return guard(nullptr, [&]() -> Status {
    if (ptr == nullptr) return Status::ok();
    return cudaRelease(ptr);
  });
}
NCCL_PROFILING_ALIAS(ncclMemFree)

// Registration is a hint in NCCL (it lets NCCL skip copies into its own
// buffers); here it reaches the network transport (collCommRegister: over
// InfiniBand, large sends leave straight from a registered host buffer).
// The handle is collCommRegister's, kept to check its deregistration.
NCCL_EXPORT ncclResult_t ncclCommRegister(const ncclComm_t comm, void* buff, size_t size, void** handle) {
  return guard(comm, [&]() -> Status {
    if (buff == nullptr || handle == nullptr || size == 0)
      return makeError(collInvalidArgument, "ncclCommRegister: buff {} size {} handle {}: none may be NULL or 0",
                       buff, size, static_cast<void*>(handle));
    auto lease = acquire(comm, "ncclCommRegister", false);
    COLL_CHECK(lease.status());
    void* token = nullptr;
    COLL_CHECK(collStatus(lease.value().coll(), collCommRegister(lease.value().coll(), buff, size, &token)));
    std::lock_guard<std::mutex> lock(comm->mu);
    comm->registrations.insert(token);
    *handle = token;
    return Status::ok();
  });
}
NCCL_PROFILING_ALIAS(ncclCommRegister)

NCCL_EXPORT ncclResult_t ncclCommDeregister(const ncclComm_t comm, void* handle) {
  return guard(comm, [&]() -> Status {
    auto lease = acquire(comm, "ncclCommDeregister", false);
    COLL_CHECK(lease.status());
    {
      std::lock_guard<std::mutex> lock(comm->mu);
      if (comm->registrations.erase(handle) == 0)
        return makeError(collInvalidArgument, "ncclCommDeregister: handle {} was not registered on this communicator",
                         handle);
    }
    return collStatus(lease.value().coll(), collCommDeregister(lease.value().coll(), handle));
  });
}
NCCL_PROFILING_ALIAS(ncclCommDeregister)

NCCL_EXPORT ncclResult_t ncclCommWindowRegister(ncclComm_t comm, void* buff, size_t size, ncclWindow_t* win,
                                                int winFlags) {
  return guard(comm, [&]() -> Status {
    if (buff == nullptr || win == nullptr || size == 0)
      return makeError(collInvalidArgument, "ncclCommWindowRegister: buff {} size {} win {}: none may be NULL or 0",
                       buff, size, static_cast<void*>(win));
    if (winFlags != NCCL_WIN_DEFAULT && winFlags != NCCL_WIN_COLL_SYMMETRIC)
      return makeError(collInvalidArgument, "ncclCommWindowRegister: winFlags {:#x} unknown", winFlags);
    auto lease = acquire(comm, "ncclCommWindowRegister", false);
    COLL_CHECK(lease.status());
    void* token = new char;
    std::lock_guard<std::mutex> lock(comm->mu);
    comm->windows[token] = size;
    *win = static_cast<ncclWindow_t>(token);
    return Status::ok();
  });
}
NCCL_PROFILING_ALIAS(ncclCommWindowRegister)

NCCL_EXPORT ncclResult_t ncclCommWindowDeregister(ncclComm_t comm, ncclWindow_t win) {
  return guard(comm, [&]() -> Status {
    auto lease = acquire(comm, "ncclCommWindowDeregister", false);
    COLL_CHECK(lease.status());
    std::lock_guard<std::mutex> lock(comm->mu);
    void* token = static_cast<void*>(win);
    if (comm->windows.erase(token) == 0)
      return makeError(collInvalidArgument, "ncclCommWindowDeregister: window {} was not registered on this communicator",
                       token);
    delete static_cast<char*>(token);
    return Status::ok();
  });
}
NCCL_PROFILING_ALIAS(ncclCommWindowDeregister)
