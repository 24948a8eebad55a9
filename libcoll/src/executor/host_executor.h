// host_executor.h — runs schedules on host buffers over transports.
//
// One thread drives every (op, channel) stream of a call — or of a whole
// group, possibly over several communicators — round-robin: each pass tries
// the next step of every stream without blocking and moves on when its
// message or slot is not there yet.  That keeps all channels and all group
// members in flight at once, so send/recv pairs in a group cannot deadlock.
// Within a group, each link (comm, channel, peer, direction) is used by the
// ops in group order, which keeps messages of different ops from mixing.
//
// Idle passes back off (spin, yield, sleep); the slow path checks abort,
// peer failures and the deadline (no progress for COLL_TIMEOUT).
#pragma once

#include <atomic>
#include <cstddef>
#include <string>
#include <vector>

#include "coll/kernels/reduce.h"
#include "coll/transport.h"
#include "record/flight_recorder.h"
#include "executor/msg_header.h"
#include "schedule/step.h"
#include "coll/base/status.h"

namespace coll::exec {

// What the executor needs of a communicator.
struct CommView {
  int rank = 0;
  int nranks = 1;
  transport::Transport* transport = nullptr;  // null when nranks == 1
  const std::atomic<bool>* aborted = nullptr;
  int64_t timeoutMs = 0;
  uint32_t spinBudget = 2000;
  uint32_t yieldBudget = 200;
  const char* name = "";
  // Every rank's board, indexed by rank, when tiny calls take it
  // (executor/board_collectives.h); null otherwise.  Looked up once at init.
  transport::Board* const* boards = nullptr;
  const uint64_t* boardOps = nullptr;  // board ops this rank has begun (collComm::boardOps)
  uint64_t* boardFinished = nullptr;   // per rank: the latest board op it was seen to have finished
};

struct HostOp {
  const CommView* comm = nullptr;
  const sched::Schedule* schedule = nullptr;
  const char* input = nullptr;
  char* output = nullptr;
  char* scratch = nullptr;  // the schedule's Buf::Scratch: runHostOps sets it
  size_t elemSize = 1;
  bool reduces = false;
  kernels::ReduceFn fn;
  Signature sig;
  bool checkRing = false;  // COLL_CHECK=1: exchange signatures around the ring first
  // The comm's flight recorder and this call's entry: a call that waits
  // long says there on whom and at which step (null: not recorded).
  record::FlightRecorder* recorder = nullptr;
  uint64_t frHandle = 0;
};

// Runs every op to completion.  On failure the returned Status names the
// rank, the op, the step and the peer waited on; peers are told.
Status runHostOps(std::vector<HostOp>& ops);

}  // namespace coll::exec
