// op_request.h — one call of a collective or p2p op, as the API received it,
// and the path it takes: validate, plan, then run now or queue in a group.
#pragma once

#include <cstddef>
#include <cstring>

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
  // Plain ints, read from the caller's enums with enumBits(): a C caller
  // may pass any value, and validate() must see it without undefined
  // behaviour.  They are cast back to the enums only once validated.
  int dtype = collFloat32;
  int op = collSum;
  int root = -1;  // Broadcast/Reduce root, Send/Recv peer, else -1
};

// The bits of an enum argument as an int, without loading an enum value
// that may be out of range.
template <typename E>
int enumBits(const E& e) {
  static_assert(sizeof(E) == sizeof(int));
  int v;
  std::memcpy(&v, &e, sizeof v);
  return v;
}

// Argument checks that need no communication; the message names the
// argument and its value.  Nothing is touched before they pass.
Status validate(collComm* comm, const OpRequest& r);

// Validates, then runs (or, inside collGroupStart/End, queues) the op.
Status submit(collComm* comm, const OpRequest& r);

Status groupStart();
Status groupEnd();
bool inGroup();

}  // namespace coll::core
