// api_coll.cc — NCCL's collectives, send/recv, reduction ops and groups on
// libcoll's (coll.h; same dtype and op values), and the ones libcoll has no
// call for (all-to-all, gather, scatter) as groups of its send/recv.
#include <cstdint>

#include "api_guard.h"
#include "coll/base/enum_bits.h"
#include "coll/kernels/reduce.h"
#include "group.h"

using coll::Status;
using coll::makeError;
using namespace coll::nccl;

namespace {

// Enum arguments are read as bits (enumBits) and checked before use: a
// caller's out-of-range value (NCCL's enums are plain C enums) must be
// refused with a message, and loading it would be undefined behaviour.
using coll::enumBits;

// The enum arguments of a call, checked; only then converted.
Status checkEnums(const char* api, const ncclDataType_t* dtype, const ncclRedOp_t* op) {
  if (dtype != nullptr && (enumBits(*dtype) < 0 || enumBits(*dtype) >= ncclNumTypes))
    return makeError(collInvalidArgument, "{}: datatype {} is not an ncclDataType_t", api, enumBits(*dtype));
  if (op != nullptr && enumBits(*op) < 0)  // created ops are >= ncclNumOps; libcoll checks which exist
    return makeError(collInvalidArgument, "{}: op {} is not an ncclRedOp_t", api, enumBits(*op));
  return Status::ok();
}

collStream_t toColl(cudaStream_t s) { return static_cast<collStream_t>(s); }
collDataType_t toColl(ncclDataType_t t) { return static_cast<collDataType_t>(t); }
collRedOp_t toColl(ncclRedOp_t op) { return static_cast<collRedOp_t>(op); }

// Runs one operation of comm's, its enum arguments checked (NULL: none),
// its lease held, its group noted.
template <typename Call>
ncclResult_t operation(ncclComm* comm, const char* api, const ncclDataType_t* dtype, const ncclRedOp_t* op,
                       Call&& call) {
  return guard(comm, [&]() -> Status {
    COLL_CHECK(checkEnums(api, dtype, op));
    auto lease = acquire(comm, api, true);
    COLL_CHECK(lease.status());
    if (inGroup()) noteGroupOperation();
    return call(lease.value().coll());
  });
}

// Block p of a buffer of nranks blocks of count elements.
char* blockOf(const void* buf, int p, size_t count, size_t elem) {
  return static_cast<char*>(const_cast<void*>(buf)) + static_cast<size_t>(p) * count * elem;
}

// The element size of dtype and the rank count of c, checked for a buffer
// of nranks blocks of count elements.
Status blockShape(collComm_t c, const char* api, size_t count, ncclDataType_t dtype, size_t* elem, int* nranks) {
  *elem = coll::kernels::dtypeSize(static_cast<coll::kernels::DType>(enumBits(dtype)));
  COLL_CHECK(collStatus(c, collCommCount(c, nranks)));
  if (count > SIZE_MAX / *elem / static_cast<size_t>(*nranks))
    return makeError(collInvalidArgument, "{}: count {} x {} ranks overflows", api, count, *nranks);
  return Status::ok();
}

// A group of send/recv, ended (run) even when a call in it failed.
template <typename Body>
Status p2pGroup(collComm_t c, Body&& body) {
  COLL_CHECK(collStatus(c, collGroupStart()));
  Status s = body();
  Status ended = collStatus(c, collGroupEnd());
  COLL_CHECK(s);
  return ended;
}

}  // namespace

NCCL_EXPORT ncclResult_t ncclAllReduce(const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype,
                                       ncclRedOp_t op, ncclComm_t comm, cudaStream_t stream) {
  return operation(comm, "ncclAllReduce", &datatype, &op, [&](collComm_t c) {
    return collStatus(c, collAllReduce(sendbuff, recvbuff, count, toColl(datatype), toColl(op), c, toColl(stream)));
  });
}
NCCL_PROFILING_ALIAS(ncclAllReduce)

NCCL_EXPORT ncclResult_t ncclAllGather(const void* sendbuff, void* recvbuff, size_t sendcount, ncclDataType_t datatype,
                                       ncclComm_t comm, cudaStream_t stream) {
  return operation(comm, "ncclAllGather", &datatype, nullptr, [&](collComm_t c) {
    return collStatus(c, collAllGather(sendbuff, recvbuff, sendcount, toColl(datatype), c, toColl(stream)));
  });
}
NCCL_PROFILING_ALIAS(ncclAllGather)

NCCL_EXPORT ncclResult_t ncclBroadcast(const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype,
                                       int root, ncclComm_t comm, cudaStream_t stream) {
  return operation(comm, "ncclBroadcast", &datatype, nullptr, [&](collComm_t c) {
    return collStatus(c, collBroadcast(sendbuff, recvbuff, count, toColl(datatype), root, c, toColl(stream)));
  });
}
NCCL_PROFILING_ALIAS(ncclBroadcast)

// The in-place broadcast of NCCL's first API.
NCCL_EXPORT ncclResult_t ncclBcast(void* buff, size_t count, ncclDataType_t datatype, int root, ncclComm_t comm,
                                   cudaStream_t stream) {
  return operation(comm, "ncclBcast", &datatype, nullptr, [&](collComm_t c) {
    return collStatus(c, collBroadcast(buff, buff, count, toColl(datatype), root, c, toColl(stream)));
  });
}
NCCL_PROFILING_ALIAS(ncclBcast)

NCCL_EXPORT ncclResult_t ncclReduceScatter(const void* sendbuff, void* recvbuff, size_t recvcount,
                                           ncclDataType_t datatype, ncclRedOp_t op, ncclComm_t comm,
                                           cudaStream_t stream) {
  return operation(comm, "ncclReduceScatter", &datatype, &op, [&](collComm_t c) {
    return collStatus(c,
                      collReduceScatter(sendbuff, recvbuff, recvcount, toColl(datatype), toColl(op), c, toColl(stream)));
  });
}
NCCL_PROFILING_ALIAS(ncclReduceScatter)

NCCL_EXPORT ncclResult_t ncclReduce(const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype,
                                    ncclRedOp_t op, int root, ncclComm_t comm, cudaStream_t stream) {
  return operation(comm, "ncclReduce", &datatype, &op, [&](collComm_t c) {
    return collStatus(c, collReduce(sendbuff, recvbuff, count, toColl(datatype), toColl(op), root, c, toColl(stream)));
  });
}
NCCL_PROFILING_ALIAS(ncclReduce)

NCCL_EXPORT ncclResult_t ncclSend(const void* sendbuff, size_t count, ncclDataType_t datatype, int peer,
                                  ncclComm_t comm, cudaStream_t stream) {
  return operation(comm, "ncclSend", &datatype, nullptr, [&](collComm_t c) {
    return collStatus(c, collSend(sendbuff, count, toColl(datatype), peer, c, toColl(stream)));
  });
}
NCCL_PROFILING_ALIAS(ncclSend)

NCCL_EXPORT ncclResult_t ncclRecv(void* recvbuff, size_t count, ncclDataType_t datatype, int peer, ncclComm_t comm,
                                  cudaStream_t stream) {
  return operation(comm, "ncclRecv", &datatype, nullptr, [&](collComm_t c) {
    return collStatus(c, collRecv(recvbuff, count, toColl(datatype), peer, c, toColl(stream)));
  });
}
NCCL_PROFILING_ALIAS(ncclRecv)

// Block p of sendbuff to rank p, block p of recvbuff from rank p.
NCCL_EXPORT ncclResult_t ncclAlltoAll(const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype,
                                      ncclComm_t comm, cudaStream_t stream) {
  return operation(comm, "ncclAlltoAll", &datatype, nullptr, [&](collComm_t c) -> Status {
    size_t elem = 0;
    int n = 0;
    COLL_CHECK(blockShape(c, "ncclAlltoAll", count, datatype, &elem, &n));
    if (count > 0 && sendbuff == recvbuff)
      return makeError(collInvalidArgument, "ncclAlltoAll: sendbuff and recvbuff must differ (no in-place all-to-all)");
    return p2pGroup(c, [&]() -> Status {
      for (int p = 0; p < n; p++) {
        COLL_CHECK(collStatus(c, collSend(blockOf(sendbuff, p, count, elem), count, toColl(datatype), p, c, toColl(stream))));
        COLL_CHECK(collStatus(c, collRecv(blockOf(recvbuff, p, count, elem), count, toColl(datatype), p, c, toColl(stream))));
      }
      return Status::ok();
    });
  });
}
NCCL_PROFILING_ALIAS(ncclAlltoAll)

// Gather (every rank's `mine` into block r of root's `blocks`) or scatter
// (block r of root's `blocks` to rank r's `mine`), as one group of
// send/recv between the root and every rank, itself included.
Status rooted(collComm_t c, const char* api, bool gather, const void* blocks, const void* mine, size_t count,
              ncclDataType_t datatype, int root, cudaStream_t stream) {
  size_t elem = 0;
  int n = 0, me = 0;
  COLL_CHECK(blockShape(c, api, count, datatype, &elem, &n));
  COLL_CHECK(collStatus(c, collCommUserRank(c, &me)));
  if (root < 0 || root >= n) return makeError(collInvalidArgument, "{}: root {} is out of range [0, {})", api, root, n);
  const collDataType_t t = toColl(datatype);
  return p2pGroup(c, [&]() -> Status {
    if (me == root)
      for (int p = 0; p < n; p++) {
        char* block = blockOf(blocks, p, count, elem);
        COLL_CHECK(collStatus(c, gather ? collRecv(block, count, t, p, c, toColl(stream))
                                        : collSend(block, count, t, p, c, toColl(stream))));
      }
    void* m = const_cast<void*>(mine);
    return collStatus(c, gather ? collSend(m, count, t, root, c, toColl(stream))
                                : collRecv(m, count, t, root, c, toColl(stream)));
  });
}

NCCL_EXPORT ncclResult_t ncclGather(const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype,
                                    int root, ncclComm_t comm, cudaStream_t stream) {
  return operation(comm, "ncclGather", &datatype, nullptr, [&](collComm_t c) {
    return rooted(c, "ncclGather", true, recvbuff, sendbuff, count, datatype, root, stream);
  });
}
NCCL_PROFILING_ALIAS(ncclGather)

NCCL_EXPORT ncclResult_t ncclScatter(const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype,
                                     int root, ncclComm_t comm, cudaStream_t stream) {
  return operation(comm, "ncclScatter", &datatype, nullptr, [&](collComm_t c) {
    return rooted(c, "ncclScatter", false, sendbuff, recvbuff, count, datatype, root, stream);
  });
}
NCCL_PROFILING_ALIAS(ncclScatter)

NCCL_EXPORT ncclResult_t ncclRedOpCreatePreMulSum(ncclRedOp_t* op, void* scalar, ncclDataType_t datatype,
                                                  ncclScalarResidence_t residence, ncclComm_t comm) {
  return guard(comm, [&]() -> Status {
    if (op == nullptr) return makeError(collInvalidArgument, "ncclRedOpCreatePreMulSum: op is NULL");
    COLL_CHECK(checkEnums("ncclRedOpCreatePreMulSum", &datatype, nullptr));
    if (enumBits(residence) != ncclScalarDevice && enumBits(residence) != ncclScalarHostImmediate)
      return makeError(collInvalidArgument, "ncclRedOpCreatePreMulSum: residence {} is not an ncclScalarResidence_t",
                       enumBits(residence));
    auto lease = acquire(comm, "ncclRedOpCreatePreMulSum", false);
    COLL_CHECK(lease.status());
    collComm_t c = lease.value().coll();
    collRedOp_t made{};
    COLL_CHECK(collStatus(c, collRedOpCreatePreMulSum(&made, scalar, toColl(datatype),
                                                      static_cast<collScalarResidence_t>(residence), c)));
    *op = static_cast<ncclRedOp_t>(made);
    return Status::ok();
  });
}
NCCL_PROFILING_ALIAS(ncclRedOpCreatePreMulSum)

NCCL_EXPORT ncclResult_t ncclRedOpDestroy(ncclRedOp_t op, ncclComm_t comm) {
  return guard(comm, [&]() -> Status {
    COLL_CHECK(checkEnums("ncclRedOpDestroy", nullptr, &op));
    auto lease = acquire(comm, "ncclRedOpDestroy", false);
    COLL_CHECK(lease.status());
    return collStatus(lease.value().coll(), collRedOpDestroy(toColl(op), lease.value().coll()));
  });
}
NCCL_PROFILING_ALIAS(ncclRedOpDestroy)

NCCL_EXPORT ncclResult_t ncclGroupStart() {
  return guard(nullptr, [] { return groupStart(); });
}
NCCL_PROFILING_ALIAS(ncclGroupStart)

NCCL_EXPORT ncclResult_t ncclGroupEnd() {
  return guard(nullptr, [] { return groupEnd(); });
}
NCCL_PROFILING_ALIAS(ncclGroupEnd)

NCCL_EXPORT ncclResult_t ncclGroupSimulateEnd(ncclSimInfo_t* simInfo) {
  return guard(nullptr, [&]() -> Status {
    (void)simInfo;
    return makeError(collInvalidUsage,
                     "ncclGroupSimulateEnd: not supported by libcoll; the group stays open (end it with ncclGroupEnd). "
                     "collGetPlanInfo gives libcoll's cost-model estimate of one call");
  });
}
NCCL_PROFILING_ALIAS(ncclGroupSimulateEnd)
