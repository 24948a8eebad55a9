// broadcast_perf — nccl-tests style benchmark and check of broadcast from -r root; busbw = algbw.
#include "common/perf.h"

int main(int argc, char** argv) { return collperf::perfMain(argc, argv, collperf::Coll::Broadcast); }
