// abi_table.h — the facts of NCCL's binary interface that a program built
// against one nccl.h relies on in a library built against another: enum and
// macro values, type sizes, struct field offsets, the config and sim-info
// initializers, and every function's type.  abi_table_ours.cc fills the
// table from libcoll's nccl.h, abi_table_nvidia.cc from NVIDIA's; the test
// compares them entry by entry.
#pragma once

#include <string>
#include <utility>
#include <vector>

namespace abi {

struct Table {
  std::vector<std::pair<std::string, long long>> values;        // name -> value
  std::vector<std::pair<std::string, std::string>> signatures;  // function -> its type, namespace-free
};

Table ours();
Table nvidia();

// Every NCCL host-API function that libcoll's libnccl.so.2 exports.
#define ABI_FUNCTIONS(X)                                                                                           \
  X(ncclMemAlloc) X(ncclMemFree) X(ncclGetVersion) X(ncclGetUniqueId) X(ncclCommInitRankConfig) X(ncclCommInitRank) \
  X(ncclCommInitAll) X(ncclCommFinalize) X(ncclCommDestroy) X(ncclCommAbort) X(ncclCommRevoke) X(ncclCommSplit)     \
  X(ncclCommShrink) X(ncclCommInitRankScalable) X(ncclGetErrorString) X(ncclGetLastError) X(ncclCommGetAsyncError)  \
  X(ncclCommCount) X(ncclCommCuDevice) X(ncclCommUserRank) X(ncclCommRegister) X(ncclCommDeregister)                \
  X(ncclCommWindowRegister) X(ncclCommWindowDeregister) X(ncclRedOpCreatePreMulSum) X(ncclRedOpDestroy)             \
  X(ncclReduce) X(ncclBcast) X(ncclBroadcast) X(ncclAllReduce) X(ncclReduceScatter) X(ncclAllGather)                \
  X(ncclAlltoAll) X(ncclGather) X(ncclScatter) X(ncclSend) X(ncclRecv) X(ncclGroupStart) X(ncclGroupEnd)            \
  X(ncclGroupSimulateEnd)

#define ABI_CONSTANTS(X)                                                                                            \
  X(NCCL_MAJOR) X(NCCL_MINOR) X(NCCL_PATCH) X(NCCL_VERSION_CODE) X(NCCL_UNIQUE_ID_BYTES) X(NCCL_CONFIG_UNDEF_INT)  \
  X(NCCL_SPLIT_NOCOLOR) X(NCCL_WIN_DEFAULT) X(NCCL_WIN_COLL_SYMMETRIC) X(NCCL_WIN_REQUIRED_ALIGNMENT)                \
  X(NCCL_CTA_POLICY_DEFAULT) X(NCCL_CTA_POLICY_EFFICIENCY) X(NCCL_CTA_POLICY_ZERO) X(NCCL_SHRINK_DEFAULT)            \
  X(NCCL_SHRINK_ABORT) X(NCCL_REVOKE_DEFAULT) X(ncclSuccess) X(ncclUnhandledCudaError) X(ncclSystemError)            \
  X(ncclInternalError) X(ncclInvalidArgument) X(ncclInvalidUsage) X(ncclRemoteError) X(ncclInProgress)               \
  X(ncclNumResults) X(ncclSum) X(ncclProd) X(ncclMax) X(ncclMin) X(ncclAvg) X(ncclNumOps) X(ncclMaxRedOp)             \
  X(ncclInt8) X(ncclChar) X(ncclUint8) X(ncclInt32) X(ncclInt) X(ncclUint32) X(ncclInt64) X(ncclUint64)             \
  X(ncclFloat16) X(ncclHalf) X(ncclFloat32) X(ncclFloat) X(ncclFloat64) X(ncclDouble) X(ncclBfloat16)               \
  X(ncclFloat8e4m3) X(ncclFloat8e5m2) X(ncclNumTypes) X(ncclScalarDevice) X(ncclScalarHostImmediate)

#define ABI_CONFIG_FIELDS(X)                                                                                         \
  X(size) X(magic) X(version) X(blocking) X(cgaClusterSize) X(minCTAs) X(maxCTAs) X(netName) X(splitShare)           \
  X(trafficClass) X(commName) X(collnetEnable) X(CTAPolicy) X(shrinkShare) X(nvlsCTAs) X(nChannelsPerNetPeer)        \
  X(nvlinkCentricSched)

#define ABI_SIM_INFO_FIELDS(X) X(size) X(magic) X(version) X(estimatedTime)

}  // namespace abi
