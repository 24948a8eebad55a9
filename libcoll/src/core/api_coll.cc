// api_coll.cc — the exported collective, p2p and group functions of coll.h.
#include "core/api_guard.h"
#include "core/op_request.h"

using coll::Status;
using coll::enumBits;
using coll::sched::CollKind;
namespace core = coll::core;

namespace {

collResult_t call(collComm* comm, const core::OpRequest& r) {
  // A bad handle is reported per thread; everything after is per comm.
  Status s = core::checkComm(comm, r.api);
  if (!s.isOk()) return core::fail(nullptr, s);
  return core::guard(comm, [&] { return core::submit(comm, r); });
}

}  // namespace

extern "C" {

collResult_t collAllReduce(const void* sendbuff, void* recvbuff, size_t count, collDataType_t datatype,
                           collRedOp_t op, collComm_t comm, collStream_t stream) {
  return call(comm, {"collAllReduce", CollKind::AllReduce, sendbuff, recvbuff, count, enumBits(datatype), enumBits(op), -1, stream});
}

collResult_t collAllGather(const void* sendbuff, void* recvbuff, size_t sendcount, collDataType_t datatype,
                           collComm_t comm, collStream_t stream) {
  return call(comm, {"collAllGather", CollKind::AllGather, sendbuff, recvbuff, sendcount, enumBits(datatype), collSum, -1, stream});
}

collResult_t collBroadcast(const void* sendbuff, void* recvbuff, size_t count, collDataType_t datatype, int root,
                           collComm_t comm, collStream_t stream) {
  return call(comm, {"collBroadcast", CollKind::Broadcast, sendbuff, recvbuff, count, enumBits(datatype), collSum, root, stream});
}

collResult_t collReduceScatter(const void* sendbuff, void* recvbuff, size_t recvcount, collDataType_t datatype,
                               collRedOp_t op, collComm_t comm, collStream_t stream) {
  return call(comm, {"collReduceScatter", CollKind::ReduceScatter, sendbuff, recvbuff, recvcount, enumBits(datatype), enumBits(op), -1, stream});
}

collResult_t collReduce(const void* sendbuff, void* recvbuff, size_t count, collDataType_t datatype, collRedOp_t op,
                        int root, collComm_t comm, collStream_t stream) {
  return call(comm, {"collReduce", CollKind::Reduce, sendbuff, recvbuff, count, enumBits(datatype), enumBits(op), root, stream});
}

collResult_t collSend(const void* sendbuff, size_t count, collDataType_t datatype, int peer, collComm_t comm,
                      collStream_t stream) {
  return call(comm, {"collSend", CollKind::Send, sendbuff, nullptr, count, enumBits(datatype), collSum, peer, stream});
}

collResult_t collRecv(void* recvbuff, size_t count, collDataType_t datatype, int peer, collComm_t comm, collStream_t stream) {
  return call(comm, {"collRecv", CollKind::Recv, nullptr, recvbuff, count, enumBits(datatype), collSum, peer, stream});
}

collResult_t collGroupStart(void) {
  return core::guard(nullptr, [] { return core::groupStart(); });
}

collResult_t collGroupEnd(void) {
  return core::guard(nullptr, [] { return core::groupEnd(); });
}

}  // extern "C"
