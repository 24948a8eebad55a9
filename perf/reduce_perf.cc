// reduce_perf — nccl-tests style benchmark and check of reduce to -r root; busbw = algbw.
#include "common/perf.h"

int main(int argc, char** argv) { return collperf::perfMain(argc, argv, collperf::Coll::Reduce); }
