#include <cstdint>

#include "core/comm.h"
#include "core/op_request.h"
#include "coll/kernels/reduce.h"

namespace coll::core {

using sched::CollKind;

Ranges rangesOf(const OpRequest& r, int rank, int nranks) {
  Ranges g;
  size_t n = r.count;
  switch (r.kind) {
    case CollKind::AllReduce: g.inElems = g.outElems = n; break;
    case CollKind::AllGather: g.inElems = n; g.outElems = n * nranks; g.inPlaceOffset = n * rank; break;
    case CollKind::ReduceScatter: g.inElems = n * nranks; g.outElems = n; break;
    case CollKind::Broadcast: g.inElems = rank == r.root ? n : 0; g.outElems = n; break;
    case CollKind::Reduce: g.inElems = n; g.outElems = rank == r.root ? n : 0; break;
    case CollKind::Send: g.inElems = n; break;
    case CollKind::Recv: g.outElems = n; break;
  }
  return g;
}

Status validateShape(collComm* comm, const OpRequest& r) {
  if (comm->aborted.load(std::memory_order_relaxed))
    return makeError(collInvalidUsage, "{}: the communicator was aborted; destroy it", r.api);
  if (int e = comm->asyncError.load(std::memory_order_relaxed); e != collSuccess) {
    std::lock_guard<std::mutex> lock(comm->errorMu);
    // The first failure's own words: later calls' errors do not nest.
    return makeError(static_cast<collResult_t>(e), "{}: the communicator failed earlier and is unusable: {}", r.api,
                     comm->failure.empty() ? std::string("(no message)") : comm->failure);
  }
  if (r.dtype < 0 || r.dtype >= collNumTypes)
    return makeError(collInvalidArgument, "{}: datatype {} is not a collDataType_t (0..{})", r.api, r.dtype,
                     collNumTypes - 1);
  bool p2p = r.kind == CollKind::Send || r.kind == CollKind::Recv;
  if (r.kind == CollKind::Broadcast || r.kind == CollKind::Reduce || p2p) {
    if (r.root < 0 || r.root >= comm->nranks)
      return makeError(collInvalidArgument, "{}: {} {} is out of range [0, {})", r.api, p2p ? "peer" : "root", r.root,
                       comm->nranks);
  }
  size_t es = kernels::dtypeSize(static_cast<kernels::DType>(r.dtype));
  size_t factor = (r.kind == CollKind::AllGather || r.kind == CollKind::ReduceScatter) ? comm->nranks : 1;
  if (r.count > SIZE_MAX / es / factor || r.count * es * factor > static_cast<size_t>(PTRDIFF_MAX))
    return makeError(collInvalidArgument, "{}: count {} of {} x {} ranks overflows the address space", r.api, r.count,
                     kernels::dtypeName(static_cast<kernels::DType>(r.dtype)), factor);
  return Status::ok();
}

Status validate(collComm* comm, OpRequest& r) {
  if (Status s = validateShape(comm, r); !s.isOk()) return s;  // no breadcrumb: the message is the user's
  if (sched::reduces(r.kind)) {
    // The call's one look-up of its op (OpRequest::preMul).
    if (r.op >= collNumOps && !r.preMul) r.preMul = comm->redops.find(static_cast<collRedOp_t>(r.op));
    const std::optional<RedOpTable::Entry>& custom = r.preMul;
    if (r.op < 0 || (r.op >= collNumOps && !custom))
      return makeError(collInvalidArgument, "{}: op {} is neither a built-in op nor a live op made by collRedOpCreatePreMulSum on this communicator",
                       r.api, r.op);
    if (custom && custom->dtype != r.dtype)
      return makeError(collInvalidArgument, "{}: op {} was created for datatype {} but is used with {}", r.api, r.op,
                       kernels::dtypeName(static_cast<kernels::DType>(custom->dtype)),
                       kernels::dtypeName(static_cast<kernels::DType>(r.dtype)));
  }
  if (r.count == 0) return Status::ok();
  size_t es = kernels::dtypeSize(static_cast<kernels::DType>(r.dtype));

  Ranges g = rangesOf(r, comm->rank, comm->nranks);
  if (g.inElems > 0 && r.sendbuf == nullptr) return makeError(collInvalidArgument, "{}: sendbuff is NULL with count {}", r.api, r.count);
  if (g.outElems > 0 && r.recvbuf == nullptr) return makeError(collInvalidArgument, "{}: recvbuff is NULL with count {}", r.api, r.count);
  if (g.inElems > 0 && g.outElems > 0) {
    auto in = reinterpret_cast<uintptr_t>(r.sendbuf), out = reinterpret_cast<uintptr_t>(r.recvbuf);
    size_t inBytes = g.inElems * es, outBytes = g.outElems * es;
    bool overlap = in < out + outBytes && out < in + inBytes;
    bool inPlace = false;
    if (r.kind == CollKind::ReduceScatter) inPlace = out == in + comm->rank * r.count * es;
    else inPlace = in == out + g.inPlaceOffset * es;
    if (overlap && !inPlace) {
      if (r.kind == CollKind::AllGather)
        return makeError(collInvalidArgument,
                         "{}: sendbuff and recvbuff overlap but sendbuff != recvbuff + rank*count*elemsize (the in-place layout)",
                         r.api);
      if (r.kind == CollKind::ReduceScatter)
        return makeError(collInvalidArgument,
                         "{}: sendbuff and recvbuff overlap but recvbuff != sendbuff + rank*recvcount*elemsize (the in-place layout)",
                         r.api);
      return makeError(collInvalidArgument, "{}: sendbuff and recvbuff overlap but are not equal (in-place needs sendbuff == recvbuff)",
                       r.api);
    }
  }
  return Status::ok();
}

}  // namespace coll::core
