/* nccl.h: the host API of NCCL 2.28, as libcoll's libnccl.so.2 implements it.
 *
 * libcoll's own declarations of NCCL's binary interface: the same type
 * layouts, enum values and function signatures as NVIDIA's header of that
 * version (tests/nccl checks each against it where it is installed), so a
 * program built against either header runs on either library.  Needs no
 * CUDA header: a stream is `struct CUstream_st*`, which is what
 * cudaStream_t names.  Not declared here: NCCL's device API (nccl_device.h)
 * and the deprecated ncclResetDebugInit; libnccl.so.2 does not export them.
 *
 * What each call does on libcoll, and what it does not support, is in
 * docs/ARCHITECTURE.md ("The NCCL ABI layer"). */
#ifndef NCCL_H_
#define NCCL_H_

#include <limits.h>
#include <stddef.h>

/* The NCCL version whose interface this is; ncclGetVersion reports it. */
#define NCCL_MAJOR 2
#define NCCL_MINOR 28
#define NCCL_PATCH 9
#define NCCL_SUFFIX ""
#define NCCL_VERSION_CODE 22809
/* Codes up to 2.8 were X*1000 + Y*100 + Z, later ones X*10000 + Y*100 + Z. */
#define NCCL_VERSION(X, Y, Z) \
  (((X) <= 2 && (Y) <= 8) ? (X) * 1000 + (Y) * 100 + (Z) : (X) * 10000 + (Y) * 100 + (Z))

/* Set when this header (not NVIDIA's) declared the API. */
#define NCCL_H_LIBCOLL 1

#ifdef __cplusplus
extern "C" {
#endif

typedef struct CUstream_st* cudaStream_t;

typedef struct ncclComm* ncclComm_t;
typedef struct ncclWindow_vidmem* ncclWindow_t;
#define NCCL_COMM_NULL NULL

#define NCCL_UNIQUE_ID_BYTES 128
typedef struct {
  char internal[NCCL_UNIQUE_ID_BYTES];
} ncclUniqueId;

typedef enum {
  ncclSuccess = 0,
  ncclUnhandledCudaError = 1,
  ncclSystemError = 2,
  ncclInternalError = 3,
  ncclInvalidArgument = 4,
  ncclInvalidUsage = 5,
  ncclRemoteError = 6, /* libcoll: also a peer that timed out or disagreed */
  ncclInProgress = 7,
  ncclNumResults = 8
} ncclResult_t;

#define NCCL_CONFIG_UNDEF_INT INT_MIN
#define NCCL_CONFIG_UNDEF_PTR NULL
#define NCCL_SPLIT_NOCOLOR -1
#define NCCL_UNDEF_FLOAT -1.0f

#define NCCL_WIN_DEFAULT 0x00
#define NCCL_WIN_COLL_SYMMETRIC 0x01
#define NCCL_WIN_REQUIRED_ALIGNMENT 4096

#define NCCL_CTA_POLICY_DEFAULT 0x00
#define NCCL_CTA_POLICY_EFFICIENCY 0x01
#define NCCL_CTA_POLICY_ZERO 0x02

#define NCCL_SHRINK_DEFAULT 0x00
#define NCCL_SHRINK_ABORT 0x01

#define NCCL_REVOKE_DEFAULT 0x00

/* Start from NCCL_CONFIG_INITIALIZER.  size/magic/version tell the library
 * which fields the caller's build has.  libcoll reads blocking and
 * commName; the tuning fields (CTAs, netName, ...) are accepted and have no
 * effect. */
typedef struct ncclConfig_v22800 {
  size_t size;
  unsigned int magic;
  unsigned int version;
  int blocking;
  int cgaClusterSize;
  int minCTAs;
  int maxCTAs;
  const char* netName;
  int splitShare;
  int trafficClass;
  const char* commName;
  int collnetEnable;
  int CTAPolicy;
  int shrinkShare;
  int nvlsCTAs;
  int nChannelsPerNetPeer;
  int nvlinkCentricSched;
} ncclConfig_t;

#define NCCL_CONFIG_MAGIC_ 0xcafebeef
#define NCCL_CONFIG_INITIALIZER                                                                      \
  {                                                                                                  \
    sizeof(ncclConfig_t), NCCL_CONFIG_MAGIC_, NCCL_VERSION(NCCL_MAJOR, NCCL_MINOR, NCCL_PATCH),     \
        NCCL_CONFIG_UNDEF_INT, NCCL_CONFIG_UNDEF_INT, NCCL_CONFIG_UNDEF_INT, NCCL_CONFIG_UNDEF_INT,  \
        NCCL_CONFIG_UNDEF_PTR, NCCL_CONFIG_UNDEF_INT, NCCL_CONFIG_UNDEF_INT, NCCL_CONFIG_UNDEF_PTR,  \
        NCCL_CONFIG_UNDEF_INT, NCCL_CONFIG_UNDEF_INT, NCCL_CONFIG_UNDEF_INT, NCCL_CONFIG_UNDEF_INT,  \
        NCCL_CONFIG_UNDEF_INT, NCCL_CONFIG_UNDEF_INT                                                 \
  }

typedef struct ncclSimInfo_v22200 {
  size_t size;
  unsigned int magic;
  unsigned int version;
  float estimatedTime;
} ncclSimInfo_t;

#define NCCL_SIM_INFO_MAGIC_ 0x74685283
#define NCCL_SIM_INFO_INITIALIZER \
  { sizeof(ncclSimInfo_t), NCCL_SIM_INFO_MAGIC_, NCCL_VERSION(NCCL_MAJOR, NCCL_MINOR, NCCL_PATCH), NCCL_UNDEF_FLOAT }

/* The enum exists so ncclMaxRedOp can be written as NVIDIA's header writes
 * it: the largest value that keeps sizeof(ncclRedOp_t) what it was. */
typedef enum { ncclNumOps_dummy = 5 } ncclRedOp_dummy_t;
typedef enum {
  ncclSum = 0,
  ncclProd = 1,
  ncclMax = 2,
  ncclMin = 3,
  ncclAvg = 4,
  ncclNumOps = 5, /* ops made by ncclRedOpCreatePreMulSum are >= this */
  ncclMaxRedOp = 0x7fffffff >> (32 - 8 * sizeof(ncclRedOp_dummy_t))
} ncclRedOp_t;

typedef enum {
  ncclInt8 = 0, ncclChar = 0,
  ncclUint8 = 1,
  ncclInt32 = 2, ncclInt = 2,
  ncclUint32 = 3,
  ncclInt64 = 4,
  ncclUint64 = 5,
  ncclFloat16 = 6, ncclHalf = 6,
  ncclFloat32 = 7, ncclFloat = 7,
  ncclFloat64 = 8, ncclDouble = 8,
  ncclBfloat16 = 9,
  ncclFloat8e4m3 = 10,
  ncclFloat8e5m2 = 11,
  ncclNumTypes = 12
} ncclDataType_t;

typedef enum { ncclScalarDevice = 0, ncclScalarHostImmediate = 1 } ncclScalarResidence_t;

/* Each call below also exists as p<name> (NCCL's profiling entry points),
 * the same function. */
#define NCCL_DECLARE_(ret, name, params) \
  ret name params;                       \
  ret p##name params;

/* Memory: cudaMalloc / cudaFree on the current device. */
NCCL_DECLARE_(ncclResult_t, ncclMemAlloc, (void** ptr, size_t size))
NCCL_DECLARE_(ncclResult_t, ncclMemFree, (void* ptr))

/* Versions and errors. */
NCCL_DECLARE_(ncclResult_t, ncclGetVersion, (int* version))
NCCL_DECLARE_(const char*, ncclGetErrorString, (ncclResult_t result))
/* The last error's message on comm (NULL: this thread's last call without
 * a communicator); "" when there was none. */
NCCL_DECLARE_(const char*, ncclGetLastError, (ncclComm_t comm))

/* Communicators.  An init inside ncclGroupStart/End completes at
 * ncclGroupEnd, as in NCCL (one thread may then create the ranks of one
 * process); a communicator is bound to the CUDA device current at its init
 * (ncclCommInitAll: devlist[i], or i). */
NCCL_DECLARE_(ncclResult_t, ncclGetUniqueId, (ncclUniqueId* uniqueId))
NCCL_DECLARE_(ncclResult_t, ncclCommInitRankConfig,
              (ncclComm_t* comm, int nranks, ncclUniqueId commId, int rank, ncclConfig_t* config))
NCCL_DECLARE_(ncclResult_t, ncclCommInitRank, (ncclComm_t* comm, int nranks, ncclUniqueId commId, int rank))
NCCL_DECLARE_(ncclResult_t, ncclCommInitAll, (ncclComm_t* comm, int ndev, const int* devlist))
NCCL_DECLARE_(ncclResult_t, ncclCommInitRankScalable,
              (ncclComm_t* newcomm, int nranks, int myrank, int nId, ncclUniqueId* commIds, ncclConfig_t* config))
NCCL_DECLARE_(ncclResult_t, ncclCommFinalize, (ncclComm_t comm))
NCCL_DECLARE_(ncclResult_t, ncclCommDestroy, (ncclComm_t comm))
NCCL_DECLARE_(ncclResult_t, ncclCommAbort, (ncclComm_t comm))
NCCL_DECLARE_(ncclResult_t, ncclCommRevoke, (ncclComm_t comm, int revokeFlags))
NCCL_DECLARE_(ncclResult_t, ncclCommSplit,
              (ncclComm_t comm, int color, int key, ncclComm_t* newcomm, ncclConfig_t* config))
/* libcoll: ncclInvalidUsage (not supported). */
NCCL_DECLARE_(ncclResult_t, ncclCommShrink,
              (ncclComm_t comm, int* excludeRanksList, int excludeRanksCount, ncclComm_t* newcomm,
               ncclConfig_t* config, int shrinkFlags))
NCCL_DECLARE_(ncclResult_t, ncclCommGetAsyncError, (ncclComm_t comm, ncclResult_t* asyncError))
NCCL_DECLARE_(ncclResult_t, ncclCommCount, (const ncclComm_t comm, int* count))
NCCL_DECLARE_(ncclResult_t, ncclCommCuDevice, (const ncclComm_t comm, int* device))
NCCL_DECLARE_(ncclResult_t, ncclCommUserRank, (const ncclComm_t comm, int* rank))

/* Buffer and window registration: accepted and tracked per communicator;
 * libcoll's collectives need neither. */
NCCL_DECLARE_(ncclResult_t, ncclCommRegister, (const ncclComm_t comm, void* buff, size_t size, void** handle))
NCCL_DECLARE_(ncclResult_t, ncclCommDeregister, (const ncclComm_t comm, void* handle))
NCCL_DECLARE_(ncclResult_t, ncclCommWindowRegister,
              (ncclComm_t comm, void* buff, size_t size, ncclWindow_t* win, int winFlags))
NCCL_DECLARE_(ncclResult_t, ncclCommWindowDeregister, (ncclComm_t comm, ncclWindow_t win))

/* Reduction ops. */
NCCL_DECLARE_(ncclResult_t, ncclRedOpCreatePreMulSum,
              (ncclRedOp_t* op, void* scalar, ncclDataType_t datatype, ncclScalarResidence_t residence,
               ncclComm_t comm))
NCCL_DECLARE_(ncclResult_t, ncclRedOpDestroy, (ncclRedOp_t op, ncclComm_t comm))

/* Collectives and point-to-point: enqueued on stream for device buffers,
 * complete on return for host buffers (libcoll accepts both). */
NCCL_DECLARE_(ncclResult_t, ncclReduce,
              (const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype, ncclRedOp_t op,
               int root, ncclComm_t comm, cudaStream_t stream))
NCCL_DECLARE_(ncclResult_t, ncclBcast,
              (void* buff, size_t count, ncclDataType_t datatype, int root, ncclComm_t comm, cudaStream_t stream))
NCCL_DECLARE_(ncclResult_t, ncclBroadcast,
              (const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype, int root,
               ncclComm_t comm, cudaStream_t stream))
NCCL_DECLARE_(ncclResult_t, ncclAllReduce,
              (const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype, ncclRedOp_t op,
               ncclComm_t comm, cudaStream_t stream))
NCCL_DECLARE_(ncclResult_t, ncclReduceScatter,
              (const void* sendbuff, void* recvbuff, size_t recvcount, ncclDataType_t datatype, ncclRedOp_t op,
               ncclComm_t comm, cudaStream_t stream))
NCCL_DECLARE_(ncclResult_t, ncclAllGather,
              (const void* sendbuff, void* recvbuff, size_t sendcount, ncclDataType_t datatype, ncclComm_t comm,
               cudaStream_t stream))
NCCL_DECLARE_(ncclResult_t, ncclAlltoAll,
              (const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype, ncclComm_t comm,
               cudaStream_t stream))
NCCL_DECLARE_(ncclResult_t, ncclGather,
              (const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype, int root,
               ncclComm_t comm, cudaStream_t stream))
NCCL_DECLARE_(ncclResult_t, ncclScatter,
              (const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype, int root,
               ncclComm_t comm, cudaStream_t stream))
NCCL_DECLARE_(ncclResult_t, ncclSend,
              (const void* sendbuff, size_t count, ncclDataType_t datatype, int peer, ncclComm_t comm,
               cudaStream_t stream))
NCCL_DECLARE_(ncclResult_t, ncclRecv,
              (void* recvbuff, size_t count, ncclDataType_t datatype, int peer, ncclComm_t comm,
               cudaStream_t stream))

/* Groups.  ncclGroupSimulateEnd: libcoll returns ncclInvalidUsage (not
 * supported) and leaves the group open. */
NCCL_DECLARE_(ncclResult_t, ncclGroupStart, (void))
NCCL_DECLARE_(ncclResult_t, ncclGroupEnd, (void))
NCCL_DECLARE_(ncclResult_t, ncclGroupSimulateEnd, (ncclSimInfo_t* simInfo))

#undef NCCL_DECLARE_

#ifdef __cplusplus
}
#endif

#endif /* NCCL_H_ */
