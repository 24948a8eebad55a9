// device_local.h — where a communicator's ranks run their device calls, as
// far as processes go, and the local device path's setup (CUDA builds).
//
// At a communicator's first device call every rank tells the others its
// process and GPU (a host all-gather).  A communicator whose ranks are all
// in this process takes the local path (device/local_clique.h): its kernels
// never wait for each other, which kernels of one process must not (CUDA
// may queue their streams one behind the other).  Ranks of one process that
// share a GPU while other ranks are elsewhere have no safe path and are
// refused with the reason.
#pragma once

#include <string>
#include <vector>

#include "coll/base/status.h"

struct collComm;

namespace coll::core {

struct RankPlacement {
  std::vector<int> devices;  // every rank's GPU
  bool allHere = false;      // every rank in this process
  // Two ranks of one process on one GPU (the first such pair), else empty.
  std::string sharedGpu;
};

// Collective (every rank at its first device call): exchanges processes
// and GPUs.
Result<RankPlacement> placeRanks(collComm* comm, int device);

// Collective, every rank in this process: rank 0 makes the ranks' shared
// LocalClique and every rank takes it (comm->clique).  When it cannot be
// made, every rank fails alike; *noPeerAccess says whether for want of
// peer access between the ranks' GPUs (then, with no GPU shared, the
// host-staged path can run them).
Status joinLocalClique(collComm* comm, const RankPlacement& where, size_t scratchBytes, bool* noPeerAccess);

}  // namespace coll::core
