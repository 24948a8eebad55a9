// sendrecv_perf — nccl-tests style benchmark and bit-exact check of ring
// send/recv: rank r sends to r+1 and receives from r-1 in one group; busbw =
// algbw. Everything but the collective's identity lives in perf/common (see
// perf.h).
#include "common/perf.h"

int main(int argc, char** argv) { return collperf::perfMain(argc, argv, collperf::Coll::SendRecv); }
