// device_local.cc — see device_local.h.
#include "device/entry/device_local.h"

#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <random>

#include "core/comm.h"
#include "core/op_request.h"
#include "device/local_clique.h"

namespace coll::core {

namespace {

// This process, among every process on every host: pids repeat across
// hosts, a random word does not (in practice).
uint64_t processNonce() {
  static const uint64_t nonce = [] {
    std::random_device rd;
    const uint64_t t = static_cast<uint64_t>(std::chrono::steady_clock::now().time_since_epoch().count());
    return (static_cast<uint64_t>(rd()) << 32 ^ rd()) ^ t * 0x9e3779b97f4a7c15ull ^ static_cast<uint64_t>(getpid());
  }();
  return nonce;
}

Status setupAllGather(collComm* comm, const char* what, const void* mine, void* all, size_t bytes) {
  OpRequest ag{what, sched::CollKind::AllGather, mine, all, bytes, collUint8, collSum, -1};
  return runHostNow(comm, ag);
}

// Rank 0's clique, until every rank of the process has taken it.
struct CliqueRegistry {
  std::mutex mu;
  std::map<uint64_t, std::shared_ptr<device::LocalClique>> cliques;
  uint64_t next = 1;
};
CliqueRegistry& cliqueRegistry() {
  static CliqueRegistry* r = new CliqueRegistry;  // never destroyed: communicators may outlive static destruction
  return *r;
}

}  // namespace

Result<RankPlacement> placeRanks(collComm* comm, int device) {
  struct Entry {
    uint64_t process;
    int32_t device;
    int32_t pad;
  };
  const Entry mine{processNonce(), device, 0};
  std::vector<Entry> all(comm->nranks);
  COLL_CHECK(setupAllGather(comm, "device setup (all-gather of processes and GPUs)", &mine, all.data(), sizeof(Entry)));
  RankPlacement p;
  p.allHere = true;
  for (int r = 0; r < comm->nranks; ++r) {
    p.devices.push_back(all[r].device);
    if (all[r].process != all[0].process) p.allHere = false;
    for (int q = 0; q < r && p.sharedGpu.empty(); ++q)
      if (all[q].process == all[r].process && all[q].device == all[r].device)
        p.sharedGpu = fmt::format("ranks {} and {} are on GPU {} in one process", q, r, all[r].device);
  }
  return p;
}

Status joinLocalClique(collComm* comm, const RankPlacement& where, size_t scratchBytes, bool* noPeerAccess) {
  // Rank 0 makes it and says under which key; 0: it could not (why: 1 no
  // peer access, 2 anything else).
  struct Made {
    uint64_t key = 0;
    uint64_t why = 0;
  };
  Made mine;
  Status made = Status::ok();
  if (comm->rank == 0) {
    device::LocalCliqueParams p;
    p.devices = where.devices;
    p.scratchBytes = scratchBytes;
    p.timeoutMs = comm->timeoutMs;
    auto c = device::LocalClique::create(p);
    if (c.isOk()) {
      CliqueRegistry& reg = cliqueRegistry();
      std::lock_guard<std::mutex> lock(reg.mu);
      mine.key = reg.next++;
      reg.cliques[mine.key] = c.value();
      comm->clique = c.value();
    } else {
      made = c.status();
      mine.why = made.message().find("no peer access") != std::string::npos ? 1 : 2;
    }
  }
  std::vector<Made> all(comm->nranks);
  Status ex = setupAllGather(comm, "device setup (the local path's key)", &mine, all.data(), sizeof(Made));
  if (ex.isOk() && comm->rank != 0 && all[0].key != 0) {
    CliqueRegistry& reg = cliqueRegistry();
    std::lock_guard<std::mutex> lock(reg.mu);
    auto it = reg.cliques.find(all[0].key);
    if (it != reg.cliques.end()) comm->clique = it->second;
  }
  // Every rank has taken it (or failed to): rank 0 drops the registry's
  // reference either way.
  unsigned char took = comm->clique ? 1 : 0;
  std::vector<unsigned char> tookAll(comm->nranks);
  if (ex.isOk()) ex = setupAllGather(comm, "device setup (the local path taken)", &took, tookAll.data(), 1);
  if (comm->rank == 0 && mine.key != 0) {
    CliqueRegistry& reg = cliqueRegistry();
    std::lock_guard<std::mutex> lock(reg.mu);
    reg.cliques.erase(mine.key);
  }
  if (!ex.isOk()) {
    comm->clique.reset();
    return ex;
  }
  *noPeerAccess = all[0].why == 1;
  if (!made.isOk()) return made;
  if (all[0].key == 0)
    return makeError(collInvalidUsage, "rank {}: rank 0 could not set up the local device path (its error says why)",
                     comm->rank);
  for (int r = 0; r < comm->nranks; ++r)
    if (!tookAll[r]) {
      comm->clique.reset();
      return makeError(collInternalError, "rank {} did not find the local device path's state", r);
    }
  return Status::ok();
}

}  // namespace coll::core
