// board_collectives.h — all-reduces, reduces, broadcasts and all-gathers
// whose every rank's part is at most transport::kBoardPayload bytes, through
// the transport's board (shared memory reaching every rank), not through
// FIFOs: each rank writes one line, reads the lines it needs, and there are
// no headers, slots or schedules.
//
// Board op j (numbered per communicator, the same on every rank) uses line
// j % kBoardLines of every rank:
//   1. That line was last written at op j-K (K = kBoardLines); before
//      rewriting it, every peer must have finished op j-K: its line of op
//      j-1 is published (it began j-1), or its `done` says so.  In a run of
//      all-reduces the former is the line this rank read at op j-1, still
//      in its cache.
//   2. Write the line: the call's packed signature, j (release), and before
//      them this rank's part if it has one (pre(input) for the reductions,
//      the input for an all-gather, the root's data for a broadcast).
//      Every rank writes its line, so every signature can be compared.
//   3. Read: all-reduce and all-gather, every peer's line; reduce, the root
//      every peer's; broadcast, every non-root the root's.  Wait until each
//      holds j (acquire), compare the signatures (a mismatch fails with both
//      ranks and values, and tells every peer), then combine: reductions in
//      rank order, post-op last (the one-shot algorithm's bits), copies in
//      rank order.  A rank that reads nothing (a broadcast's root, a
//      reduce's non-roots) returns at once: step 1 keeps it from lapping a
//      peer by more than K-1 calls.
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
#include "schedule/schedules.h"

namespace coll::exec {

struct BoardCall {
  const CommView* comm = nullptr;
  sched::CollKind kind = sched::CollKind::AllReduce;  // AllReduce, Reduce, Broadcast or AllGather
  const void* send = nullptr;
  void* recv = nullptr;
  size_t count = 0;  // elements of each rank's part (an all-gather's sendcount)
  size_t elemSize = 4;
  int root = -1;     // Reduce, Broadcast
  kernels::ReduceFn fn;  // the reductions'
  Signature sig;
  uint64_t op = 0;  // board op number, from 1
  // COLL_CHECK=1: every rank reads every line (compares every signature),
  // a broadcast's root and a reduce's non-roots too.
  bool checkAll = false;
};

// Whether a call of `kind` with `count` elements of `elemSize` bytes (an
// all-gather's sendcount) may take the board: the same answer on every rank
// that passes the same arguments.
bool boardFits(sched::CollKind kind, size_t count, size_t elemSize);

// Every rank's board, by rank, when comm's transport reaches them all (the
// same answer on every rank); else empty.  Asked once, at init: calls that
// boardFits() may then take the board, through CommView::boards.
std::vector<transport::Board*> collectBoards(const CommView& comm);
Status boardCollective(const BoardCall& call);

// The executor's slow path, while this rank runs call `sig` through its
// FIFOs: a peer that took the board for the same call (same call number:
// their counts differ across the board's size limit, or one of them is in
// a group) waits there for a line this rank will never write.  Returns the
// mismatch naming both ranks, else ok.  A peer's board line of this rank's
// next board op holds that peer's call; one with another call number is a
// later call of a peer this call no longer needs.
Status boardPathMismatch(const CommView& comm, const Signature& sig);

}  // namespace coll::exec
