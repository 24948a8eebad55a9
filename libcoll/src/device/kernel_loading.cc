// kernel_loading.cc — see kernel_loading.h.
#include "device/kernel_loading.h"

#include <chrono>
#include <mutex>
#include <set>

#include "coll/device_reduce.h"
#include "p2p/cuda_status.h"
#include "device/current_device.h"
#include "device/ll_allreduce.h"
#include "device/local_reduce.h"
#include "device/program_kernel.h"
#include "device/small_allreduce.h"
#include "device/staged_kernel.h"
#include "p2p/peer_barrier.h"
#include "p2p/peer_sendrecv.h"
#include "coll/base/log.h"

namespace coll::device {

Status loadKernels(int device) {
  static std::mutex mu;
  static std::set<int> loaded;  // the devices done
  if (device < 0) COLL_CHECK(p2p::cudaStatus(cudaGetDevice(&device), "cudaGetDevice"));
  // Held throughout: a second communicator's first call waits until the
  // kernels are in, rather than launch one before.
  std::lock_guard<std::mutex> lock(mu);
  if (loaded.count(device) != 0) return Status::ok();
  const CurrentDevice on(device);
  COLL_CHECK(on.status());
  const auto start = std::chrono::steady_clock::now();
  struct Part {
    const char* what;
    cudaError_t (*load)();
  };
  const Part parts[] = {
      {"the reduction kernels", kernels::collDeviceReduceLoad},
      {"the barrier kernel", p2p::loadBarrierKernel},
      {"the send/recv kernel", p2p::loadP2pKernel},
      {"the one-launch all-reduce kernels", loadSmallAllReduceKernels},
      {"the LL all-reduce kernels", loadLlAllReduceKernels},
      {"the program kernels", loadProgramKernels},
      {"the staged path's kernel", loadStagedKernel},
      {"the local path's reduction kernels", loadLocalReduceKernels},
  };
  for (const Part& p : parts) {
    const cudaError_t e = p.load();
    if (e != cudaSuccess) {
      (void)cudaGetLastError();  // not left for the caller's next check
      return makeError(collUnhandledCudaError, "loading {} on GPU {}: {} ({})", p.what, device, cudaGetErrorString(e),
                       cudaGetErrorName(e));
    }
  }
  loaded.insert(device);
  COLL_LOG(Info, kInit, -1, "device kernels loaded on GPU {} in {:.1f} ms", device,
           std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count());
  return Status::ok();
}

}  // namespace coll::device
