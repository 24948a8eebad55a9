// ipc_peers.h — the P2P transport's memory: every rank's device block,
// exported with CUDA IPC at creation and mapped by every other rank, so
// kernels of one rank read and write the others' blocks directly.
//
// Who can map whom: ranks of one process (collCommInitAll) use the raw
// pointer (CUDA IPC refuses its own process); ranks on the same GPU (any
// number of them per GPU) or on GPUs with peer access (NVLink or PCIe,
// cudaDeviceCanAccessPeer) open the IPC handle.  When some rank cannot map
// some peer, every rank learns it in the same step and creation fails with
// *unreachable set on all of them alike, so they can all take another path
// (libcoll's host-staged one).
#pragma once

#include <cstddef>
#include <functional>
#include <memory>
#include <vector>

#include "coll/base/status.h"

namespace coll::p2p {

// Runs a host all-gather of `bytes` per rank (rank r's block at r*bytes).
using HostAllGather = std::function<Status(const void* mine, void* all, size_t bytes)>;

struct IpcPeersParams {
  int rank = 0;
  int nranks = 1;
  int device = 0;            // the CUDA device the block lives on
  size_t bytes = 0;          // every rank's block size (must match on all ranks)
  const char* sizeHint = "";  // what sets `bytes`, for the error when ranks differ
};

class IpcPeers {
 public:
  // Collective (every rank calls it, in the same order as other
  // collectives): allocates this rank's block, zeroed before any peer can
  // see it, exports it and maps every peer's.
  static Result<std::unique_ptr<IpcPeers>> create(const IpcPeersParams& p, const HostAllGather& allGather,
                                                  bool* unreachable);
  ~IpcPeers();
  IpcPeers(const IpcPeers&) = delete;
  IpcPeers& operator=(const IpcPeers&) = delete;

  char* local() const { return bases_[p_.rank]; }
  // Rank r's block as this rank addresses it.
  char* block(int r) const { return bases_[r]; }
  const std::vector<char*>& blocks() const { return bases_; }
  // The GPU's PCI bus id, for logs.
  const char* busId() const { return busId_; }

 private:
  explicit IpcPeers(const IpcPeersParams& p) : p_(p) {}
  Status init(const HostAllGather& allGather, bool* unreachable);

  IpcPeersParams p_;
  char* base_ = nullptr;
  std::vector<char*> bases_;
  std::vector<bool> opened_;  // bases_[r] came from cudaIpcOpenMemHandle
  char busId_[32] = {};
};

}  // namespace coll::p2p
