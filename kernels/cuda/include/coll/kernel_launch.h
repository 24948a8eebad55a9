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

}  // namespace coll::cuda
