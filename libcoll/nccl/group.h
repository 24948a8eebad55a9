// group.h — ncclGroupStart/End: libcoll's groups, plus the communicator
// creations NCCL lets a group hold.
//
// NCCL's pattern for one thread that drives several ranks (nccl-tests with
// -g, a process per node) is ncclGroupStart; ncclCommInitRank for each
// rank; ncclGroupEnd.  Each init blocks until every rank has joined, so
// they cannot run one after another on the calling thread: an init (or a
// split) called inside a group is queued here, the program gets its handle
// at once, and the outermost ncclGroupEnd runs the queued creations side by
// side, one thread each, and waits for all of them (each bounded by the
// communicator's timeout).  Collectives queue in libcoll's own group
// (collGroupStart/End); a group with both is refused, as NCCL refuses it.
#pragma once

#include <functional>

#include "handle.h"

namespace coll::nccl {

bool inGroup();  // this thread is between ncclGroupStart and its End
// Queues `create` for the outermost ncclGroupEnd of this thread, to run
// with `device` current; `target` (NULL: a split's NCCL_SPLIT_NOCOLOR rank,
// which makes no communicator but takes part) is marked pending until then
// and keeps the failure's message.
void queueCreation(ncclComm* target, int device, std::function<Status()> create);
// Notes that a collective or send/recv joined this thread's group.
void noteGroupOperation();

Status groupStart();
Status groupEnd();

}  // namespace coll::nccl
