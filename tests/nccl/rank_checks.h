// rank_checks.h — what one rank of nccl_program checks on its
// communicator: queries and errors, every all-reduce datatype x op and a
// pre-multiplied sum, reduce and reduce-scatter with every op, the
// data-moving collectives and send/recv, splits; then finalize and destroy.
#pragma once

#include "program_rank.h"

namespace ncclprog {

// ncclCommInitRankConfig with a name and blocking = 1; R.comm, or NULL on
// failure (reported).
ncclComm_t initRank(Rank& R, const ncclUniqueId& id);
// Every check on R.comm, then ncclCommFinalize and ncclCommDestroy.
void runRank(Rank& R);

}  // namespace ncclprog
