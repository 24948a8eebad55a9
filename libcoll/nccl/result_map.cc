#include "result_map.h"

namespace coll::nccl {

ncclResult_t toNccl(collResult_t r) {
  switch (r) {
    case collSuccess: return ncclSuccess;
    case collUnhandledCudaError: return ncclUnhandledCudaError;
    case collSystemError: return ncclSystemError;
    case collInternalError: return ncclInternalError;
    case collInvalidArgument: return ncclInvalidArgument;
    case collInvalidUsage: return ncclInvalidUsage;
    case collRemoteError: return ncclRemoteError;
    case collInProgress: return ncclInProgress;
    case collTimeout: return ncclRemoteError;
    case collArgMismatch: return ncclRemoteError;
    case collAborted: return ncclInvalidUsage;
    default: return ncclInternalError;
  }
}

const char* errorString(ncclResult_t r) {
  switch (r) {
    case ncclSuccess: return "no error";
    case ncclUnhandledCudaError: return "unhandled cuda error (ncclGetLastError says which; COLL_DEBUG=INFO logs more)";
    case ncclSystemError: return "unhandled system error (ncclGetLastError says which; COLL_DEBUG=INFO logs more)";
    case ncclInternalError: return "internal error - please report this issue to libcoll";
    case ncclInvalidArgument: return "invalid argument (ncclGetLastError says which)";
    case ncclInvalidUsage: return "invalid usage (ncclGetLastError says what)";
    case ncclRemoteError: return "remote process exited, timed out, disagreed, or there was a network error";
    case ncclInProgress: return "NCCL operation in progress";
    default: return "unknown result code";
  }
}

}  // namespace coll::nccl
