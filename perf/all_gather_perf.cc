// all_gather_perf — nccl-tests style benchmark and check of all-gather; size = nranks*count*elemsize, busbw = algbw * (n-1)/n.
#include "common/perf.h"

int main(int argc, char** argv) { return collperf::perfMain(argc, argv, collperf::Coll::AllGather); }
