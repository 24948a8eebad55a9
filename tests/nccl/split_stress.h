// split_stress.h — nccl_program's `splits` mode: ncclCommSplit again and
// again in fresh processes, in every shape a rank can leave a split.
#pragma once

namespace ncclprog {

// `rounds` rounds of n forked ranks: each inits a communicator, splits it
// in the round's shape, checks its place, and exits at once (the process
// that made the new communicator's id too).  Returns the failure count.
int runSplitStress(int n, int rounds);

}  // namespace ncclprog
