// ipc_peers.cc — see ipc_peers.h.
#include "ipc_peers.h"

#include <cuda_runtime_api.h>
#include <unistd.h>

#include <cstdint>
#include <cstring>

#include "cuda_status.h"

namespace coll::p2p {
namespace {

// What each rank tells the others at creation.
struct Exported {
  cudaIpcMemHandle_t handle;
  uint64_t rawAddress;  // for ranks of the same process (IPC refuses those)
  uint64_t bytes;
  int32_t pid;
  int32_t device;
  char busId[32];
};

}  // namespace

Result<std::unique_ptr<IpcPeers>> IpcPeers::create(const IpcPeersParams& p, const HostAllGather& allGather,
                                                   bool* unreachable) {
  std::unique_ptr<IpcPeers> c(new IpcPeers(p));
  bool cannot = false;
  Status s = c->init(allGather, &cannot);
  if (unreachable != nullptr) *unreachable = cannot;
  COLL_CHECK(s);
  return c;
}

Status IpcPeers::init(const HostAllGather& allGather, bool* unreachable) {
  const int n = p_.nranks;
  COLL_CHECK(cudaStatus(cudaSetDevice(p_.device), "cudaSetDevice"));
  void* base = nullptr;
  COLL_CHECK(cudaStatus(cudaMalloc(&base, p_.bytes), "cudaMalloc of the P2P block"));
  base_ = static_cast<char*>(base);
  // Zeroed (and the zeroing finished) before the handle leaves this rank:
  // peers read control words from the first kernel on.
  COLL_CHECK(cudaStatus(cudaMemset(base_, 0, p_.bytes), "cudaMemset"));
  COLL_CHECK(cudaStatus(cudaDeviceSynchronize(), "cudaDeviceSynchronize"));

  Exported mine{};
  COLL_CHECK(cudaStatus(cudaIpcGetMemHandle(&mine.handle, base_), "cudaIpcGetMemHandle"));
  mine.rawAddress = reinterpret_cast<uint64_t>(base_);
  mine.bytes = p_.bytes;
  mine.pid = static_cast<int32_t>(getpid());
  mine.device = p_.device;
  COLL_CHECK(cudaStatus(cudaDeviceGetPCIBusId(mine.busId, sizeof mine.busId, p_.device), "cudaDeviceGetPCIBusId"));
  std::memcpy(busId_, mine.busId, sizeof busId_);
  std::vector<Exported> all(n);
  COLL_CHECK(allGather(&mine, all.data(), sizeof(Exported)));

  bases_.assign(n, nullptr);
  opened_.assign(n, false);
  bool reachable = true;
  for (int r = 0; r < n; ++r) {
    const Exported& e = all[r];
    if (e.bytes != p_.bytes)
      return makeError(collInvalidUsage, "device P2P block size differs: rank {} has {} B, rank {} has {} B ({} must "
                       "match on every rank)", r, e.bytes, p_.rank, p_.bytes, p_.sizeHint);
    if (r == p_.rank) {
      bases_[r] = base_;
      continue;
    }
    if (e.pid == mine.pid) {  // a rank of this process (collCommInitAll)
      // Its pointer as it is; on another GPU, through peer access, which
      // a process enables per pair of GPUs (IPC mappings do it themselves).
      if (e.device != p_.device) {
        int can = 0;
        if (cudaDeviceCanAccessPeer(&can, p_.device, e.device) != cudaSuccess || !can) {
          (void)cudaGetLastError();
          reachable = false;  // decided together below
          continue;
        }
        COLL_CHECK(enablePeerAccess(e.device));
      }
      bases_[r] = reinterpret_cast<char*>(e.rawAddress);
      continue;
    }
    // Another process: same GPU (several ranks per GPU), or a GPU this one
    // can reach (NVLink or PCIe peer access).
    if (std::strncmp(e.busId, mine.busId, sizeof mine.busId) != 0) {
      int peerDev = -1, can = 0;
      if (cudaDeviceGetByPCIBusId(&peerDev, e.busId) != cudaSuccess ||
          cudaDeviceCanAccessPeer(&can, p_.device, peerDev) != cudaSuccess || !can) {
        (void)cudaGetLastError();
        reachable = false;  // decided together below
        continue;
      }
    }
    void* mapped = nullptr;
    COLL_CHECK(cudaStatus(cudaIpcOpenMemHandle(&mapped, e.handle, cudaIpcMemLazyEnablePeerAccess),
                          "cudaIpcOpenMemHandle of a peer's P2P block"));
    bases_[r] = static_cast<char*>(mapped);
    opened_[r] = true;
  }
  // Every rank learns whether all could map all (else all fall back).
  int token = reachable ? 1 : 0;
  std::vector<int> tokens(n);
  COLL_CHECK(allGather(&token, tokens.data(), sizeof token));
  for (int r = 0; r < n; ++r)
    if (tokens[r] == 0) {
      *unreachable = true;
      return makeError(collInvalidUsage, "device buffers: rank {} cannot map every peer's GPU memory (no peer access)",
                       r);
    }
  return Status::ok();
}

IpcPeers::~IpcPeers() {
  for (size_t r = 0; r < bases_.size(); ++r)
    if (opened_[r]) (void)cudaIpcCloseMemHandle(bases_[r]);
  if (base_ != nullptr) (void)cudaFree(base_);
  (void)cudaGetLastError();
}

}  // namespace coll::p2p
