// board_allreduce.h — all-reduces of at most transport::kBoardPayload bytes
// through the transport's board (shared memory reaching every rank), not
// through FIFOs: one cache line written, N-1 read, no headers or slots.
//
// Board op j (numbered per communicator, the same on every rank):
//   1. Line j % 2 was last written at op j-2; before rewriting it, every
//      peer must have finished op j-2: its line of op j-1 is published (it
//      began j-1), or its `done` says so.  In a run of board ops the former
//      is the line this rank read at op j-1, still in its cache.
//   2. Write pre(input), the call's packed signature and j (release).
//   3. For every peer: wait until its line holds j (acquire), compare the
//      signatures (a mismatch fails with both ranks and values, and tells
//      every peer), then reduce all lines in rank order, post-op last, into
//      recvbuff: the same bits on every rank.
//   4. done = j.
// Each wait polls all the peers it still needs every round (never yielding
// for one while another is ready), spins, then yields (almost at once when
// ranks outnumber cores), and checks the deadline, abort and failed or dead
// peers like every executor wait.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "coll/kernels/reduce.h"
#include "executor/host_executor.h"
#include "executor/msg_header.h"

namespace coll::exec {

struct BoardCall {
  const CommView* comm = nullptr;
  const void* send = nullptr;
  void* recv = nullptr;
  size_t count = 0;
  size_t elemSize = 4;
  kernels::ReduceFn fn;
  Signature sig;
  uint64_t op = 0;  // board op number, from 1
};

// Every rank's board, by rank, when comm's transport reaches them all (the
// same answer on every rank); else empty.  Asked once, at init: all-reduces
// of at most transport::kBoardPayload bytes may then take the board, through
// CommView::boards.
std::vector<transport::Board*> collectBoards(const CommView& comm);
Status boardAllReduce(const BoardCall& call);

}  // namespace coll::exec
