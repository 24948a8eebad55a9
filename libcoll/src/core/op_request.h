// op_request.h — one call of a collective or p2p op, as the API received it,
// and the path it takes: validate, plan, then run now or queue in a group.
#pragma once

#include <cstddef>
#include <cstring>
#include <optional>

#include "coll.h"
#include "coll/kernels/reduce.h"
#include "core/redop_table.h"
#include "executor/msg_header.h"
#include "schedule/schedules.h"
#include "tuner/tuner.h"
#include "coll/base/enum_bits.h"
#include "coll/base/status.h"

namespace coll::core {

struct OpRequest {
  const char* api = "";  // "collAllReduce", ... for messages
  sched::CollKind kind = sched::CollKind::AllReduce;
  const void* sendbuf = nullptr;
  void* recvbuf = nullptr;
  size_t count = 0;
  // Plain ints, read from the caller's enums with enumBits(): a C caller
  // may pass any value, and validate() must see it without undefined
  // behaviour.  They are cast back to the enums only once validated.
  int dtype = collFloat32;
  int op = collSum;
  int root = -1;  // Broadcast/Reduce root, Send/Recv peer, else -1
  void* stream = nullptr;  // cudaStream_t for device buffers
  // A pre-mul op with collScalarDevice residence reads its scalar here
  // instead of at the op's pointer: the host-staged device path's pinned
  // copy of a device scalar, made in stream order.
  const void* scalarAt = nullptr;
  // The pre-mul op of a reducing call (op >= collNumOps), as it was when
  // the API took the call: looked up once, by validate(), and read from
  // here by everything after (the executors, a call that runs later on
  // another thread: a group's deferred device call, the host-staged device
  // path's proxy).  NCCL lets the caller destroy the op once the call
  // returns, and a later create may reuse its handle.  Already set (a
  // staged piece's request): validate() keeps it.
  std::optional<RedOpTable::Entry> preMul;
};

// The elements a call reads from sendbuf and writes to recvbuf on `rank`
// (0: that buffer is not used there).
struct Ranges {
  size_t inElems = 0;
  size_t outElems = 0;
  // In-place layout: sendbuf == recvbuf + inPlaceOffset elements.
  size_t inPlaceOffset = 0;
};
Ranges rangesOf(const OpRequest& r, int rank, int nranks);

// Argument checks that need no communication; the message names the
// argument and its value.  Nothing is touched before they pass.  Sets
// r.preMul for a reducing call with a pre-mul op (when not set already):
// the call's one look-up of its op.
Status validate(collComm* comm, OpRequest& r);
// The part of validate() that concerns the call's shape, not its buffers
// or op: comm state, dtype, root/peer range, size overflow.  What
// collGetPlanInfo checks.
Status validateShape(collComm* comm, const OpRequest& r);

// The tuner's decision for a call of this shape (count > 0) as the call
// itself takes it: from the plan cache if the call was planned before, else
// from the tuner (not cached: a query builds no schedule).
tune::Decision decisionFor(collComm* comm, sched::CollKind k, size_t count, size_t elemSize, int root);

// The reduction of a validated reducing call (its pre-mul op: r.preMul).
// A pre-mul scalar with collScalarDevice residence is read from memory now,
// or, when deviceScalar is given, handed back there for the device kernels
// to read.
kernels::ReduceFn reduceFnOf(collComm* comm, const OpRequest& r, const void** deviceScalar);
// The op as ranks must agree on it (signatures: executor/msg_header.h).
exec::OpKind opKindOf(int op);

// Validates, then runs (or, inside collGroupStart/End, queues) the op: on
// host buffers here, on device buffers through device/entry/device_entry.h.
Status submit(collComm* comm, OpRequest r);
// Validates and runs a host-buffer op now, also inside a group (internal
// steps such as the device setup's exchange).
Status runHostNow(collComm* comm, OpRequest r);
// Validates and queues a host-buffer op in this thread's open group (the
// host-staged path's proxy runs each piece of a group's send/recv so, as one host group).
Status queueHostNow(collComm* comm, OpRequest r);

Status groupStart();
Status groupEnd();
bool inGroup();

}  // namespace coll::core
