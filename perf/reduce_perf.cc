// reduce_perf — nccl-tests style benchmark and bit-exact check of reduce to -r
// root; busbw = algbw. Everything but the collective's identity lives in
// perf/common (see perf.h).
#include "common/perf.h"

int main(int argc, char** argv) { return collperf::perfMain(argc, argv, collperf::Coll::Reduce); }
