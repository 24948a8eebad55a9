// api_comm.cc — the exported communicator functions of coll.h.
#include <atomic>
#include <cstring>
#include <thread>
#include <vector>

#include "bootstrap/bootstrap.h"
#include "core/api_guard.h"
#include "core/buffer_kind.h"
#include "core/record_hooks.h"
#include "device/entry/device_entry.h"
#include "core/launch_env.h"
#include "core/op_request.h"
#include "coll/base/interfaces.h"
#include "coll/base/env.h"
#include "coll/base/settings.h"
#include "coll/base/log.h"

using coll::Status;
using coll::makeError;
namespace core = coll::core;

namespace {

// The rendezvous root's deadline: COLL_TIMEOUT, as every rank reads it.
coll::Result<int64_t> rootTimeoutMs() {
  auto ms = coll::settings::durationMsOr("COLL_TIMEOUT");
  COLL_CHECK(ms.status());
  return static_cast<int64_t>(ms.value());
}

// Once per process, on rank 0 only: a secret derived from public data keeps
// out strays and other jobs, not an attacker.
void warnDerivedSecretOnce(const core::LaunchInfo& li) {
  static std::atomic<bool> warned{false};
  if (warned.exchange(true)) return;
  COLL_LOG(Warn, kInit, li.rank,
           "no COLL_SECRET: the rendezvous secret is {}; anyone who can reach {} and knows these can join the job. "
           "On untrusted networks set COLL_SECRET to the same random value on every rank (64 hex digits, e.g. "
           "`openssl rand -hex 32`)",
           li.secretSource, li.rootAddress);
}

Status initRank(collComm_t* comm, int nranks, const collUniqueId* id, int rank, collConfig_t* config,
                const std::string& rootFrom = "") {
  if (comm == nullptr) return makeError(collInvalidArgument, "collCommInitRank: comm (the output pointer) is NULL");
  *comm = nullptr;
  if (nranks < 1) return makeError(collInvalidArgument, "collCommInitRank: nranks {} must be >= 1", nranks);
  if (rank < 0 || rank >= nranks)
    return makeError(collInvalidArgument, "collCommInitRank: rank {} is out of range [0, {})", rank, nranks);
  core::InitParams p{rank, nranks, id, config, rootFrom};
  auto c = core::createComm(p);
  COLL_CHECK(c.status());
  *comm = c.value();
  return Status::ok();
}

}  // namespace

extern "C" {

collResult_t collGetVersion(int* version) {
  return core::guard(nullptr, [&] {
    if (version == nullptr) return makeError(collInvalidArgument, "collGetVersion: version is NULL");
    *version = COLL_VERSION_CODE;
    return Status::ok();
  });
}

const char* collGetErrorString(collResult_t r) {
  switch (r) {
    case collSuccess: return "no error";
    case collUnhandledCudaError: return "unhandled cuda error";
    case collSystemError: return "unhandled system error (shared memory, socket, out of memory, ...)";
    case collInternalError: return "internal error - please report this issue";
    case collInvalidArgument: return "invalid argument";
    case collInvalidUsage: return "invalid usage";
    case collRemoteError: return "remote process exited or there was a network error";
    case collInProgress: return "operation in progress";
    case collTimeout: return "timed out (COLL_TIMEOUT)";
    case collArgMismatch: return "ranks called with different arguments";
    case collAborted: return "communicator aborted";
    default: return "unknown result code";
  }
}

const char* collGetLastError(collComm_t comm) {
  if (comm != nullptr && core::isLiveComm(comm)) {
    std::lock_guard<std::mutex> lock(comm->errorMu);
    return comm->lastError.c_str();
  }
  return core::threadError();
}

collResult_t collGetUniqueId(collUniqueId* uniqueId) {
  return core::guard(nullptr, [&]() -> Status {
    if (uniqueId == nullptr) return makeError(collInvalidArgument, "collGetUniqueId: uniqueId is NULL");
    auto secret = coll::boot::randomSecret();
    COLL_CHECK(secret.status());
    // The root listens on COLL_ROOT_ADDR, else on the interface
    // COLL_SOCKET_IFNAME names (how ranks on other hosts reach it), else on
    // loopback: a job on several hosts sets one of the two on the rank that
    // makes the id (Bootstrap::connect says so to a rank that cannot reach it).
    std::string addr = coll::settings::readText("COLL_ROOT_ADDR").value_or("");
    if (addr.empty() && coll::settings::readText("COLL_SOCKET_IFNAME")) {
      auto itf = coll::net::chooseInterfaceFromEnv(false);
      COLL_CHECK(itf.status());
      addr = itf.value().address.toString();  // port 0: any free one
    }
    auto timeout = rootTimeoutMs();
    COLL_CHECK(timeout.status());
    auto id = coll::boot::createRoot(addr, secret.value(), timeout.value());
    COLL_CHECK(id.status());
    *uniqueId = id.value();
    return Status::ok();
  });
}

collResult_t collCommInitRank(collComm_t* comm, int nranks, collUniqueId commId, int rank) {
  return core::guard(nullptr, [&] { return initRank(comm, nranks, &commId, rank, nullptr); });
}

collResult_t collCommInitRankConfig(collComm_t* comm, int nranks, collUniqueId commId, int rank, collConfig_t* config) {
  return core::guard(nullptr, [&] { return initRank(comm, nranks, &commId, rank, config); });
}

collResult_t collCommInitAll(collComm_t* comms, int ndev, const int* devlist) {
  (void)devlist;  // a rank's GPU is its device buffers' (coll.h)
  return core::guard(nullptr, [&]() -> Status {
    if (comms == nullptr) return makeError(collInvalidArgument, "collCommInitAll: comms is NULL");
    if (ndev < 1) return makeError(collInvalidArgument, "collCommInitAll: ndev {} must be >= 1", ndev);
    collUniqueId id{};
    if (ndev > 1) {
      auto secret = coll::boot::randomSecret();
      COLL_CHECK(secret.status());
      auto timeout = rootTimeoutMs();
      COLL_CHECK(timeout.status());
      auto made = coll::boot::createRoot("", secret.value(), timeout.value());
      COLL_CHECK(made.status());
      id = made.value();
    }
    std::vector<Status> results(ndev);
    std::vector<std::thread> threads;
    for (int r = 0; r < ndev; ++r)
      threads.emplace_back([&, r] {
        try {
          results[r] = initRank(&comms[r], ndev, &id, r, nullptr);
        } catch (const std::exception& e) {
          results[r] = makeError(collInternalError, "internal error: {}", e.what());
        }
      });
    for (auto& t : threads) t.join();
    for (int r = 0; r < ndev; ++r)
      if (!results[r].isOk()) {
        for (int k = 0; k < ndev; ++k)
          if (comms[k] != nullptr) {
            core::destroyComm(comms[k]);
            comms[k] = nullptr;
          }
        return results[r];
      }
    return Status::ok();
  });
}

collResult_t collCommInitFromEnv(collComm_t* comm) {
  return core::guard(nullptr, [&]() -> Status {
    if (comm == nullptr) return makeError(collInvalidArgument, "collCommInitFromEnv: comm is NULL");
    auto detected = core::detectLaunch([](const char* name) { return coll::env::get(name); });
    COLL_CHECK(detected.status());
    const core::LaunchInfo& li = detected.value();
    for (const std::string& note : li.notes) COLL_LOG(Info, kInit, li.launched ? li.rank : -1, "launch: {}", note);
    if (!li.launched || li.nranks == 1) return initRank(comm, 1, nullptr, 0, nullptr);  // a 1-rank job
    auto secret = coll::boot::parseSecret(li.secretHex.value_or(""));
    COLL_CHECK(secret.status());
    // The only step that is not a pure function of the environment: a host
    // name in MASTER_ADDR becomes a numeric address here.
    auto addr = core::resolveRootAddress(li.rootAddress, li.rootSource);
    COLL_CHECK(addr.status());
    const std::string numeric = addr.value().toString();
    // Slurm gives no local size, and not every launcher a local rank.
    const std::string local = li.localRank < 0    ? "local rank not given"
                              : li.localNranks < 0 ? fmt::format("local rank {}, local size not given", li.localRank)
                                                   : fmt::format("local rank {} of {}", li.localRank, li.localNranks);
    COLL_LOG(Info, kInit, li.rank, "launched by {}: rank {} of {} ({}); rendezvous {} (from {}{}); secret: {}",
             li.source, li.rank, li.nranks, local, li.rootAddress, li.rootSource,
             numeric == li.rootAddress ? std::string() : ", resolved to " + numeric, li.secretSource);
    collUniqueId id{};
    if (li.rank == 0) {
      if (li.secretDerived) warnDerivedSecretOnce(li);
      if (coll::net::isLoopback(addr.value()) && li.localNranks > 0 && li.localNranks < li.nranks)
        COLL_LOG(Warn, kInit, 0,
                 "the rendezvous address {} (from {}) is a loopback address on rank 0, but only {} of the {} ranks "
                 "run on this host: ranks on other hosts cannot reach it; set it to rank 0's address on the network",
                 numeric == li.rootAddress ? li.rootAddress : li.rootAddress + " = " + numeric, li.rootSource,
                 li.localNranks, li.nranks);
      // Rank 0 hosts the rendezvous at the address the launcher chose.
      auto timeout = rootTimeoutMs();
      COLL_CHECK(timeout.status());
      auto made = coll::boot::createRoot(numeric, secret.value(), timeout.value());
      if (!made.isOk())
        return makeError(made.status().code(),
                         "rank 0 cannot host the rendezvous at {} (from {}{}): it must be an address of rank 0's own "
                         "host and a free port (set COLL_ROOT=host:port to choose another): {}",
                         li.rootAddress, li.rootSource,
                         numeric == li.rootAddress ? std::string() : ", resolved to " + numeric,
                         made.status().message());
      id = made.value();
    } else {
      id = coll::boot::encodeId(coll::boot::IdContents{addr.value(), secret.value()});
    }
    // The job's ranks may disagree on what the launcher told them: say
    // what this one was told.
    Status s = initRank(comm, li.nranks, &id, li.rank, nullptr, li.rootSource);
    if (!s.isOk()) return s.withCause(fmt::format("{} (this rank was started with {})", s.cause(), li.vars));
    return s;
  });
}

collResult_t collCommDestroy(collComm_t comm) {
  return core::guard(nullptr, [&]() -> Status {
    COLL_CHECK(core::checkComm(comm, "collCommDestroy"));
    core::destroyComm(comm);
    return Status::ok();
  });
}

collResult_t collCommAbort(collComm_t comm) {
  return core::guard(nullptr, [&]() -> Status {
    COLL_CHECK(core::checkComm(comm, "collCommAbort"));
    // Only an atomic store: safe from any thread while another is inside a
    // collective; that thread returns collAborted at its next slow check.
    comm->aborted.store(true, std::memory_order_relaxed);
    int expected = collSuccess;
    comm->asyncError.compare_exchange_strong(expected, collAborted);
    // A waiter asleep on the doorbell must see it now, not at its next nap's end.
    if (comm->transport) comm->transport->wake();
    return Status::ok();
  });
}

collResult_t collCommCount(const collComm_t comm, int* count) {
  return core::guard(nullptr, [&]() -> Status {
    COLL_CHECK(core::checkComm(comm, "collCommCount"));
    if (count == nullptr) return makeError(collInvalidArgument, "collCommCount: count is NULL");
    *count = comm->nranks;
    return Status::ok();
  });
}

collResult_t collCommUserRank(const collComm_t comm, int* rank) {
  return core::guard(nullptr, [&]() -> Status {
    COLL_CHECK(core::checkComm(comm, "collCommUserRank"));
    if (rank == nullptr) return makeError(collInvalidArgument, "collCommUserRank: rank is NULL");
    *rank = comm->rank;
    return Status::ok();
  });
}

collResult_t collCommRegister(const collComm_t comm, void* buff, size_t size, void** handle) {
  return core::guard(comm, [&]() -> Status {
    COLL_CHECK(core::checkComm(comm, "collCommRegister"));
    if (buff == nullptr || handle == nullptr || size == 0)
      return makeError(collInvalidArgument, "collCommRegister: buff {} size {} handle {}: none may be NULL or 0", buff,
                       size, static_cast<void*>(handle));
    // Device memory: nothing registers it yet (the device path between
    // hosts stages through the host); a host buffer goes to the transport.
    if (comm->transport && core::bufferKind(buff).kind == core::MemKind::Host)
      COLL_CHECK(comm->transport->registerBuffer(buff, size));
    auto reg = std::make_unique<collComm::Registration>(collComm::Registration{buff, size});
    void* token = reg.get();
    std::lock_guard<std::mutex> lock(comm->regMu);
    comm->registrations.emplace(token, std::move(reg));
    *handle = token;
    return Status::ok();
  });
}

collResult_t collCommDeregister(const collComm_t comm, void* handle) {
  return core::guard(comm, [&]() -> Status {
    COLL_CHECK(core::checkComm(comm, "collCommDeregister"));
    std::lock_guard<std::mutex> lock(comm->regMu);
    auto it = comm->registrations.find(handle);
    if (it == comm->registrations.end())
      return makeError(collInvalidArgument, "collCommDeregister: handle {} was not registered on this communicator",
                       handle);
    if (comm->transport && core::bufferKind(it->second->buff).kind == core::MemKind::Host)
      comm->transport->deregisterBuffer(it->second->buff);
    comm->registrations.erase(it);
    return Status::ok();
  });
}

collResult_t collCommDumpRecord(const collComm_t comm, const char* path) {
  return core::guard(nullptr, [&]() -> Status {
    COLL_CHECK(core::checkComm(comm, "collCommDumpRecord"));
    return core::dumpRecord(comm, "api", "", path ? path : "");
  });
}

collResult_t collCommGetAsyncError(collComm_t comm, collResult_t* asyncError) {
  return core::guard(nullptr, [&]() -> Status {
    COLL_CHECK(core::checkComm(comm, "collCommGetAsyncError"));
    if (asyncError == nullptr) return makeError(collInvalidArgument, "collCommGetAsyncError: asyncError is NULL");
    // Device work reports after its call returned (a barrier timeout, ranks
    // whose calls differ).
    if (Status f = core::deviceAsyncFailure(comm); !f.isOk() && comm->asyncError.load() == collSuccess)
      core::fail(comm, f);
    *asyncError = static_cast<collResult_t>(comm->asyncError.load());
    return Status::ok();
  });
}

collResult_t collRedOpCreatePreMulSum(collRedOp_t* op, void* scalar, collDataType_t datatype,
                                      collScalarResidence_t residence, collComm_t comm) {
  return core::guard(nullptr, [&]() -> Status {
    COLL_CHECK(core::checkComm(comm, "collRedOpCreatePreMulSum"));
    if (op == nullptr) return makeError(collInvalidArgument, "collRedOpCreatePreMulSum: op is NULL");
    if (scalar == nullptr) return makeError(collInvalidArgument, "collRedOpCreatePreMulSum: scalar is NULL");
    int dt = coll::enumBits(datatype), res = coll::enumBits(residence);
    if (dt < 0 || dt >= collNumTypes)
      return makeError(collInvalidArgument, "collRedOpCreatePreMulSum: datatype {} is not a collDataType_t", dt);
    if (res != collScalarHostImmediate && res != collScalarDevice)
      return makeError(collInvalidArgument, "collRedOpCreatePreMulSum: residence {} is not a collScalarResidence_t", res);
    auto made = comm->redops.create(scalar, datatype, residence);
    COLL_CHECK(made.status());
    *op = made.value();
    return Status::ok();
  });
}

collResult_t collRedOpDestroy(collRedOp_t op, collComm_t comm) {
  return core::guard(nullptr, [&]() -> Status {
    COLL_CHECK(core::checkComm(comm, "collRedOpDestroy"));
    int v = coll::enumBits(op);
    if (v < 0) return makeError(collInvalidArgument, "collRedOpDestroy: op {} is not a collRedOp_t", v);
    return comm->redops.destroy(static_cast<collRedOp_t>(v));
  });
}

}  // extern "C"
