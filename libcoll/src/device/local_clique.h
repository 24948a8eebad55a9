// local_clique.h — device calls of a communicator whose ranks all live in
// this process (collCommInitAll, or one thread per rank): the local device
// path.  Built only with the CUDA toolkit.
//
// Why not the IPC path's kernels: ranks of one process enqueue on streams of
// one CUDA context, and CUDA maps a context's streams onto a few hardware
// work queues (CUDA_DEVICE_MAX_CONNECTIONS, 8 by default), so two ranks'
// streams may share one queue.  A kernel that waits for a peer's kernel (a
// barrier, a flag) can then wait for ever for a kernel queued behind it —
// the emulated runtime's COLL_EMU_WORK_QUEUES=1 shows it.  Here no kernel
// waits for anything: the ranks share one object in host memory, and a call
// is enqueued once every rank of the process has made it, by whichever
// thread made it last, as plain stream work joined by events:
//
//   every rank's stream records `in` (its inputs are ready);
//   each GPU's hub stream (its lowest rank's) waits for every `in`, runs
//     its slice of the call (schedule/local_plan.h: copies, and reductions
//     reading every rank's input and writing every rank's output in one
//     kernel, device/local_reduce.h; no staging), records `out`;
//   every rank's stream waits for every hub's `out`.
//
// An event wait only ever refers to work already queued, so whatever queues
// the streams share, nothing can wait for work queued behind it.  The host
// waits only for its peers' calls (every wait bounded by the communicator's
// timeout, ended by an abort), never for the GPU.  Arguments are compared on
// the host as the calls meet: a mismatch fails the call on every rank at
// once, naming both ranks.  Send/recv pair up the same way: a copy on the
// receiver's stream between events of both streams.
//
// One thread may drive all ranks inside collGroupStart/End: every call is
// posted first (post*), and the waits (await) come after.  A group whose
// calls are captured into a CUDA graph needs every rank's stream in the same
// capture (streams forked from one origin stream); a capture on some ranks'
// streams only is refused.  A communicator's calls stay in call order
// across its streams, as on the other paths (stream_order.h, per rank).
#pragma once

#include <cuda_runtime_api.h>

#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <utility>
#include <vector>

#include "device/device_op.h"
#include "device/stream_order.h"
#include "p2p/peer_sendrecv.h"
#include "schedule/local_plan.h"
#include "coll/base/status.h"

namespace coll::device {

using p2p::P2pOp;

struct LocalCliqueParams {
  std::vector<int> devices;  // rank r's GPU
  size_t scratchBytes = 0;   // per GPU (COLL_DEVICE_STAGE_BYTES)
  int64_t timeoutMs = 0;     // the host's waits for peers' calls
};

class LocalClique {
 public:
  // Enables peer access between every two GPUs of the ranks (fails when
  // some pair has none), allocates each GPU's scratch, makes the events.
  static Result<std::shared_ptr<LocalClique>> create(const LocalCliqueParams& p);
  ~LocalClique();
  LocalClique(const LocalClique&) = delete;
  LocalClique& operator=(const LocalClique&) = delete;

  int nranks() const { return static_cast<int>(p_.devices.size()); }
  int device(int rank) const { return p_.devices[rank]; }

  // Rank `rank`'s next collective (validated): enqueued, for every rank,
  // once each has posted its call of the same number.
  Status postCollective(int rank, const DeviceOp& op);
  // Rank `rank`'s send/recv (one call, or a group's) on stream s: each
  // enqueued once its peer's matching op is posted.
  Status postP2p(int rank, const std::vector<P2pOp>& ops, cudaStream_t s);
  // Waits until everything `rank` posted is enqueued (or the clique
  // failed), at most the timeout; `aborted` (the rank's communicator was
  // aborted) ends the wait.
  Status await(int rank, const std::atomic<bool>& aborted);
  // The end of a group whose calls on `rank` used several streams: each
  // waits for the rank's last call.
  Status joinStreams(int rank, const std::vector<cudaStream_t>& streams);
  // The first failure (mismatch, timeout, abort, a CUDA error), or ok.
  Status status() const;
  // `rank`'s communicator goes: peers that wait for it stop waiting.
  void leave(int rank);

 private:
  explicit LocalClique(const LocalCliqueParams& p);
  Status init();

  struct PendingP2p {
    int rank;  // who posted it
    void* buf;
    size_t bytes;
    cudaStream_t stream;
  };

  // The helpers below run with mu_ held.
  Status failLocked(Status s);
  Status launchReadyLocked();
  Status launchCollective(uint64_t call, std::vector<DeviceOp>& ops);
  Status runHub(size_t hub, cudaStream_t stream, const std::vector<DeviceOp>& ops,
                const std::vector<sched::LocalItem>& items);
  Status matchP2pLocked();
  Status launchP2p(const PendingP2p& send, const PendingP2p& recv);
  bool doneLocked(int rank) const;
  std::string stuckRanksLocked(int rank) const;

  LocalCliqueParams p_;
  std::vector<int> hubOf_;        // rank -> hub (one per GPU, in first-rank order)
  std::vector<int> hubDevice_;    // hub -> GPU
  std::vector<char*> scratch_;    // hub -> scratchBytes
  std::vector<unsigned> hubBlocks_;  // hub -> the reduction kernel's most blocks
  std::vector<cudaEvent_t> in_;   // rank -> "inputs ready" (on its GPU)
  std::vector<cudaEvent_t> out_;  // hub -> "slice done" (on its GPU)
  std::vector<cudaEvent_t> sent_, received_;  // rank -> send/recv joins
  std::vector<std::unique_ptr<StreamOrder>> order_;  // rank -> its call order

  mutable std::mutex mu_;
  std::condition_variable cv_;
  Status failed_ = Status::ok();
  std::vector<std::deque<DeviceOp>> posted_;  // rank -> collectives not yet launched
  uint64_t launched_ = 0;                     // collectives enqueued so far
  std::map<std::pair<int, int>, std::deque<PendingP2p>> sends_, recvs_;  // (from, to)
  std::vector<int> p2pOpen_;  // rank -> its send/recv not yet enqueued
  std::vector<bool> left_;
};

}  // namespace coll::device
