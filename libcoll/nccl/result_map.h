// result_map.h — libcoll's results as NCCL's.
//
// NCCL has eight result codes; libcoll has three more, each of which a NCCL
// program must still be able to handle.  The message that says which it was
// stays in ncclGetLastError.
#pragma once

#include "coll.h"
#include "nccl.h"

namespace coll::nccl {

// collTimeout (a peer did not answer in time) and collArgMismatch (ranks
// called with different arguments: a peer disagreed) -> ncclRemoteError, as
// NCCL reports a peer's failure; collAborted (the communicator was aborted
// or revoked) -> ncclInvalidUsage, what NCCL returns for a call on one.
ncclResult_t toNccl(collResult_t r);
const char* errorString(ncclResult_t r);

}  // namespace coll::nccl
