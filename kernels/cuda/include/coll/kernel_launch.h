// kernel_launch.h — one way to launch a kernel, for every .cu file of the
// project: coll::cuda::launch(kernel, grid, block, sharedBytes, stream,
// args...) is kernel<<<grid, block, sharedBytes, stream>>>(args...) with
// the arguments' types checked against the kernel's parameters.  Built with
// nvcc it calls cudaLaunchKernel; built for the host (COLL_DEVICE_EMULATION,
// kernels/cuda/emulation) the same call queues the kernel on an emulated
// stream, which `<<<...>>>` (nvcc syntax) could not do.
#pragma once

#include <cuda_runtime_api.h>

#include <type_traits>

namespace coll::cuda {

template <class... P>
cudaError_t launch(void (*kernel)(P...), dim3 grid, dim3 block, size_t sharedBytes, cudaStream_t stream,
                   std::type_identity_t<P>... args) {
#if defined(COLL_DEVICE_EMULATION)
  return coll::emu::launch(kernel, grid, block, sharedBytes, stream, args...);  // cuda_emulation.h
#else
  void* argv[] = {static_cast<void*>(&args)...};
  return cudaLaunchKernel(reinterpret_cast<const void*>(kernel), grid, block, argv, sharedBytes, stream);
#endif
}

// Makes `kernel` resident on the current device now, not at its first
// launch.  CUDA loads kernels lazily by default (CUDA_MODULE_LOADING=LAZY
// since 12.2), and a load may wait for the device's running kernels: the
// first launch of one of ours behind a kernel that spins until something
// else happens (a barrier waiting for a peer, a staged call waiting for its
// proxy) then blocks its caller until that kernel ends, or for good where
// the thing it waits for is behind the caller.  (An H200 run of the device
// tests: the first program-kernel launch behind a held stream waited for
// the holder.)  cudaFuncGetAttributes loads the function, as NCCL does for
// its kernels at init.  The emulated runtime has nothing to load.
template <class... P>
cudaError_t load(void (*kernel)(P...)) {
#if defined(COLL_DEVICE_EMULATION)
  (void)kernel;
  return cudaSuccess;
#else
  cudaFuncAttributes attributes;
  return cudaFuncGetAttributes(&attributes, reinterpret_cast<const void*>(kernel));
#endif
}

}  // namespace coll::cuda
