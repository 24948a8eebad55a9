// reduce_scatter_perf — nccl-tests style benchmark and check of reduce-scatter; size = nranks*count*elemsize, busbw = algbw * (n-1)/n.
#include "common/perf.h"

int main(int argc, char** argv) { return collperf::perfMain(argc, argv, collperf::Coll::ReduceScatter); }
