// device_comm.h — collectives on CUDA device buffers, enqueued on the
// caller's stream (coll::device).  Built only with the CUDA toolkit.
//
// Every rank owns one device block of the P2P transport (transports/p2p:
// exported with CUDA IPC and mapped by every other rank at the first device
// collective, so ranks may share a GPU, any number of them, or sit on GPUs
// with peer access), laid out here as:
//
//   [control 256 B: flag, counter][input region: cap B][result region: cap B]
//   [small slot 0][small slot 1]      (the one-launch small all-reduce)
//   [LL buffer 0][LL buffer 1]        (the LL one-launch all-reduce, ll_allreduce.h)
//   [p2p control: sent[N][C], acked[N][C], sizes[N][C][kP2pSlots]]
//   [mailboxes: N x C channels x kP2pSlots x 128 KiB]
//                                     (send/recv, peer_sendrecv.h)
//   [channel control: kMaxChannels x 256 B]  (the program kernel's per-block
//                                     flags, program_kernel.h)
//
// A collective above the one-launch size runs one of two ways:
//   * a fixed sequence of stream operations per piece of at most `cap`
//     bytes: copy the input into this rank's input region (pre-multiplied
//     there for a pre-mul op), a barrier kernel, reductions / copies that
//     read the peers' regions through their mappings, and barriers (see
//     device_collectives.cc for each collective and the bytes it moves);
//   * the program kernel: the call's steps (schedule/device_program.h) in
//     one launch of `channels` blocks, and a group's calls together in one
//     launch per stream and reduction type.  COLL_DEVICE_PROGRAM=1 sends
//     every such call and group there; the default (auto) those whose
//     stream operations would pass sched::kDeviceStreamOpBudget (a full
//     stream blocks the caller) and all-reduces of 2-4 ranks up to 8 MiB,
//     where it was faster (sched::programByDefault,
//     schedule/device_stream_ops.h), and groups holding such a call; 0 none.
// The host only enqueues: nothing waits for the GPU.  Barriers count in
// device memory, so a captured CUDA graph replays correctly.
//
// Every barrier wait is bounded: past the timeout the kernel records which
// rank it waited for in host-mapped memory and gives up; the next call on the
// communicator (and collCommGetAsyncError) reports "rank R did not arrive".
// Every barrier also compares the ranks' call signatures (collective, count,
// dtype, op, root, call number): ranks that called with different arguments
// get an asynchronous collArgMismatch-style report naming both ranks and
// both values, instead of NCCL's hang or garbage.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "coll/kernels/reduce.h"
#include "device/device_op.h"
#include "device/ll_allreduce.h"
#include "device/program_launch.h"
#include "device/stream_order.h"
#include "executor/msg_header.h"
#include "p2p/ipc_peers.h"
#include "p2p/peer_barrier.h"
#include "p2p/peer_sendrecv.h"
#include "schedule/device_stream_ops.h"
#include "schedule/schedules.h"
#include "coll/base/status.h"

namespace coll::device {

using p2p::CallSig;
using p2p::HostAllGather;
using p2p::P2pOp;

// Which calls take the program kernel (COLL_DEVICE_PROGRAM=0, auto, 1).
enum class ProgramMode : uint8_t { Off = 0, On = 1, Auto = 2 };

struct DeviceCommParams {
  int rank = 0;
  int nranks = 1;
  int device = 0;          // the CUDA device of the user's buffers
  size_t regionBytes = 0;  // cap: COLL_DEVICE_STAGE_BYTES
  size_t llBytes = 0;      // all-reduces and reduces up to this size take LL (COLL_DEVICE_LL_BYTES)
  ProgramMode program = ProgramMode::Auto;  // which calls take the program kernel (COLL_DEVICE_PROGRAM)
  int channels = 0;        // its blocks per launch; 0: SMs / (2 x ranks on the GPU), at most kMaxChannels
  int64_t timeoutMs = 0;   // barrier waits
};

class DeviceComm {
 public:
  // Collective over the host path (all ranks must call it together): exports
  // this rank's regions and maps every peer's.
  // When some rank cannot map some peer's memory (GPUs without peer
  // access), every rank fails with *peersUnreachable set: the caller then
  // takes the host-staged path, all ranks alike.
  static Result<std::unique_ptr<DeviceComm>> create(const DeviceCommParams& p, const HostAllGather& allGather,
                                                    bool* peersUnreachable);
  ~DeviceComm();
  DeviceComm(const DeviceComm&) = delete;
  DeviceComm& operator=(const DeviceComm&) = delete;

  int device() const { return p_.device; }
  // Enqueues op on op.stream and returns; errors are launch errors or an
  // earlier barrier timeout.
  Status enqueue(const DeviceOp& op);
  // A group's collectives on this communicator, in call order.  When the
  // group takes the program kernel (on: a group that is not all small
  // all-reduces/reduces; auto: a group whose stream operations would pass
  // the budget), one program launch per run of sched::planProgramRuns (one
  // stream, one reduction type).  Otherwise runs of small all-reduces/
  // reduces that can share a launch (same stream, dtype and op, no pre-mul,
  // all in one small slot: schedule/device_group_plan.h) take one kernel;
  // the rest are enqueued one by one.
  Status enqueueGroup(const std::vector<DeviceOp>& ops);
  // Enqueues send/recv ops (one call, or a whole group's) as one kernel on
  // s.  Sends and recvs must pair up across ranks in order, with equal sizes.
  Status enqueueP2p(const std::vector<P2pOp>& ops, cudaStream_t s);
  // The end of a group whose calls used several streams: each of them
  // waits for the group's last call, as in NCCL (stream_order.h).
  Status joinStreams(const std::vector<cudaStream_t>& streams);
  // A failure the kernels recorded so far: ok, collArgMismatch (calls with
  // different arguments) or collTimeout (a peer never arrived within the
  // communicator's timeout), with a message naming the ranks.
  Status asyncStatus() const;

 private:
  explicit DeviceComm(const DeviceCommParams& p) : p_(p) {}
  Status init(const HostAllGather& allGather);

  char* input(int r) const { return peers_->block(r) + kControlBytes; }
  char* result(int r) const { return peers_->block(r) + kControlBytes + p_.regionBytes; }
  size_t llOffset() const { return kControlBytes + 2 * p_.regionBytes + 2 * kSmallSlotBytes; }
  size_t p2pControlOffset() const { return llOffset() + 2 * kLlSlotBytes; }
  size_t p2pControlBytes() const { return p2p::p2pControlBytes(p_.nranks); }
  size_t mailboxOffset() const { return p2pControlOffset() + p2pControlBytes(); }
  size_t channelOffset() const;
  size_t allocationBytes() const;
  unsigned long long* counter() const {
    return reinterpret_cast<unsigned long long*>(peers_->local()) + p2p::kCounterWord;
  }
  unsigned long long timeoutNs() const;
  Status barrier(cudaStream_t s);
  // Sets sig_ (the call's signature for its barriers) and advances seq_.
  void beginCall(const exec::Signature& sig, uint64_t calls);
  // The one-launch kernels' arguments for op over `slots` (sig_ set).
  SmallAllReduceArgs oneLaunchArgs(const DeviceOp& op, char** slots, size_t slotBytes) const;
  Status smallAllReduce(const DeviceOp& op);
  Status llAllReduce(const DeviceOp& op);
  // An all-reduce or reduce of this many bytes in one launch: LL, or the
  // flag-based kernel.
  Status oneLaunch(const DeviceOp& op, size_t bytes);
  // A fused run of sched::planDeviceGroup: ops[0 .. offsets.size()) in one
  // launch, each at its byte offset in the small slot.
  Status smallGroup(const DeviceOp* ops, const std::vector<size_t>& offsets);
  // The ranks' shared settings (LL size, program kernel, channels) must
  // match; then the channel count every rank uses.
  Status agreeOnSettings(const HostAllGather& allGather);
  // The program kernel is not off and this communicator's size fits it
  // (2 .. kMaxProgramRanks ranks); takesProgram: and this call takes it
  // (COLL_DEVICE_PROGRAM's rule, the same on every rank).
  bool programUsable() const;
  bool takesProgram(const DeviceOp& op) const;
  // The most stream operations op queues on the stream-op way, and the
  // sizes that count follows (schedule/device_stream_ops.h).
  uint64_t streamOps(const DeviceOp& op) const;
  sched::DeviceStreamShape streamShape() const;
  // ops[0 .. n) (one stream; reducing ones of one dtype and op) as program
  // launches: one, unless the steps exceed a launch's parameter space.
  Status runProgram(const DeviceOp* ops, size_t n);
  // One call's launches on op.stream (the device current, no ordering).
  Status enqueueOne(const DeviceOp& op);
  Status copy(void* dst, const void* src, size_t bytes, cudaStream_t s);
  // dst = a[0] op a[1] op ... in rank order, over n elements at element
  // offset `at` of every rank's `region` (input or result), post-op last.
  Status reduceChain(void* dst, bool fromResult, size_t at, size_t n, const kernels::ReduceFn& fn, cudaStream_t s);

  Status allReduce(const DeviceOp& op);
  Status allGather(const DeviceOp& op);
  Status broadcast(const DeviceOp& op);
  Status reduceScatter(const DeviceOp& op);
  Status reduce(const DeviceOp& op);
  // Copies count elements of op.send into this rank's input region at
  // element `at`, pre-multiplied when the op says so.
  Status stageIn(const DeviceOp& op, const void* src, size_t at, size_t n);

  static constexpr size_t kControlBytes = 256;
 public:
  // All-reduces of at most this many bytes take the one-launch kernel.
  static constexpr size_t kSmallSlotBytes = 32 << 10;

 private:
  DeviceCommParams p_;
  std::unique_ptr<p2p::IpcPeers> peers_;      // every rank's block, mapped here
  unsigned long long** peerFlags_ = nullptr;  // device array: rank r's flag word
  char** smallSlots_ = nullptr;               // device array: rank r's small slot 0
  char** llSlots_ = nullptr;                  // device array: rank r's LL buffer 0
  char** peerBases_ = nullptr;                // device array: peers_->blocks()
  bool unreachable_ = false;                  // some rank could not map some peer
  unsigned long long* hostError_ = nullptr;   // mapped error record (peer_barrier.h), kErrorWords
  unsigned long long* devError_ = nullptr;    // its device address
  int channels_ = 1;                          // program kernel blocks (agreed at init)
  std::vector<ProgramLaunch> launches_;         // the program kernel's parameters (reused; ~10 KB each)
  CallSig sig_;                               // the call being enqueued, for its barriers
  uint64_t seq_ = 0;                          // device collectives enqueued so far
  StreamOrder order_;                         // the calls in call order across streams
};

}  // namespace coll::device
