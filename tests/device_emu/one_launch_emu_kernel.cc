// One single-block kernel's source (COLL_EMU_KERNEL_SOURCE: small_allreduce.cu
// or ll_allreduce.cu; built once for each, see CMakeLists.txt) compiled for
// the host, one rank per process (cuda_emulation.h, COLL_EMU_PROCESS_BLOCK):
// its launcher (coll::cuda::launch) runs the kernel as one block of host
// threads, to completion, on the calling thread's process.
#define COLL_EMU_PROCESS_BLOCK 1
#include "cuda_emulation.h"

#include COLL_EMU_KERNEL_SOURCE
