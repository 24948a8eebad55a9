// One single-block kernel's source (COLL_EMU_KERNEL_SOURCE: small_allreduce.cu
// or ll_allreduce.cu; built once for each, see CMakeLists.txt) compiled for
// the host, one rank per process (cuda_emulation.h, COLL_EMU_PROCESS_BLOCK):
// its launcher runs the kernel as one block of host threads, to completion,
// instead of cudaLaunchKernel.
#define COLL_EMU_PROCESS_BLOCK 1
#include "cuda_emulation.h"

static cudaError_t emuLaunch(const void* fn, void** args, dim3 block, cudaStream_t stream);
#define cudaLaunchKernel(fn, grid, block, args, shared, stream) emuLaunch(fn, args, block, stream)
// g++ gives oneLaunchKernel<(anonymous)::Kernel> a weak symbol named alike
// in every file (nvcc names each file's anonymous namespace apart), so the
// two one-launch files' dispatchers would merge at link time: rename.
#define Kernel COLL_EMU_KERNEL_NAME
#include COLL_EMU_KERNEL_SOURCE
#undef Kernel
#undef cudaLaunchKernel

static cudaError_t emuLaunch(const void* fn, void** args, dim3, cudaStream_t) {  // always kEmuThreads threads, no stream
  using Args = coll::device::KernelArgs;  // the included kernel file's
  coll::emu::runBlock(reinterpret_cast<void (*)(Args)>(const_cast<void*>(fn)), *static_cast<const Args*>(args[0]));
  return cudaSuccess;
}
