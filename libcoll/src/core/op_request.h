// op_request.h — one call of a collective or p2p op, as the API received it,
// and the path it takes: validate, plan, then run now or queue in a group.
#pragma once

#include <cstddef>

#include "coll.h"
#include "schedule/schedules.h"
#include "util/status.h"

namespace coll::core {

struct OpRequest {
  const char* api = "";  // "collAllReduce", ... for messages
  sched::CollKind kind = sched::CollKind::AllReduce;
  const void* sendbuf = nullptr;
  void* recvbuf = nullptr;
  size_t count = 0;
  collDataType_t dtype = collFloat32;
  collRedOp_t op = collSum;
  int root = -1;  // Broadcast/Reduce root, Send/Recv peer, else -1
};

// Argument checks that need no communication; the message names the
// argument and its value.  Nothing is touched before they pass.
Status validate(collComm* comm, const OpRequest& r);

// Validates, then runs (or, inside collGroupStart/End, queues) the op.
Status submit(collComm* comm, const OpRequest& r);

Status groupStart();
Status groupEnd();
bool inGroup();

}  // namespace coll::core
