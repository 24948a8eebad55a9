// perf.h — the shared driver of the *_perf tools (nccl-tests' table).
#pragma once

#include "common/colls.h"

namespace collperf {

// Runs the whole tool: parses argv, inits the communicator from the
// launcher's environment, sweeps sizes x dtypes x ops x roots, prints the
// nccl-tests table on rank 0.  Returns the process exit code: 0, 1 (wrong
// values or a library error) or 2 (bad arguments).
int perfMain(int argc, char** argv, Coll coll);

}  // namespace collperf
