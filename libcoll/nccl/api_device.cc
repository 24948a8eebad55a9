// api_device.cc — the two host entry points of NCCL's device API
// (nccl_device/core.h: ncclDevCommCreate, ncclDevCommDestroy), which
// libcoll does not implement: a program's own kernels calling NCCL's
// device functions need NCCL's device library and its symmetric memory.
//
// Exported all the same, because programs link them without calling them:
// PyTorch's libtorch_cuda.so names both, and the loader refuses to load it
// (an undefined symbol) on a libnccl.so.2 without them.  A call fails
// with ncclInvalidUsage and says why (ncclGetLastError), as
// ncclCommShrink does; torch only calls them for NCCL symmetric memory.
#include "api_guard.h"

using coll::Status;
using coll::makeError;
using namespace coll::nccl;

// Opaque here: nccl.h does not declare the device API (nor does NVIDIA's;
// nccl_device.h does), and these functions never look inside.
struct ncclDevComm;
struct ncclDevCommRequirements;

namespace {

Status notImplemented(const char* api) {
  return makeError(collInvalidUsage,
                   "{}: NCCL's device API (nccl_device.h) is not implemented by libcoll; use the host "
                   "collectives on device buffers",
                   api);
}

}  // namespace

NCCL_EXPORT ncclResult_t ncclDevCommCreate(ncclComm_t comm, const ncclDevCommRequirements* reqs, ncclDevComm* outDevComm) {
  (void)reqs, (void)outDevComm;  // *outDevComm is the caller's struct: left as it is
  return guard(comm, [] { return notImplemented("ncclDevCommCreate"); });
}
NCCL_PROFILING_ALIAS(ncclDevCommCreate)

NCCL_EXPORT ncclResult_t ncclDevCommDestroy(ncclComm_t comm, const ncclDevComm* devComm) {
  (void)devComm;
  return guard(comm, [] { return notImplemented("ncclDevCommDestroy"); });
}
NCCL_PROFILING_ALIAS(ncclDevCommDestroy)
