// all_reduce_perf — nccl-tests style benchmark and check of all-reduce; busbw = algbw * 2(n-1)/n.
#include "common/perf.h"

int main(int argc, char** argv) { return collperf::perfMain(argc, argv, collperf::Coll::AllReduce); }
