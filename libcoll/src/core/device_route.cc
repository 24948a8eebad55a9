// device_route.cc — requestMemory(): which executor a call goes to.
#include "core/comm.h"
#include "core/device_path.h"

namespace coll::core {

Result<MemKind> requestMemory(collComm* comm, const OpRequest& r) {
  if (r.count == 0) return MemKind::Host;
  const Ranges g = rangesOf(r, comm->rank, comm->nranks);
  const BufferKind in = g.inElems > 0 ? bufferKind(r.sendbuf) : BufferKind{};
  const BufferKind out = g.outElems > 0 ? bufferKind(r.recvbuf) : BufferKind{};
  const bool inDev = g.inElems > 0 && in.kind == MemKind::Device;
  const bool outDev = g.outElems > 0 && out.kind == MemKind::Device;
  if (g.inElems > 0 && g.outElems > 0 && inDev != outDev)
    return makeError(collInvalidArgument, "{}: sendbuff is {} memory but recvbuff is {} memory; both must be host or both device",
                     r.api, inDev ? "device" : "host", outDev ? "device" : "host");
  if (inDev && outDev && in.device != out.device)
    return makeError(collInvalidArgument, "{}: sendbuff is on GPU {} but recvbuff on GPU {}", r.api, in.device, out.device);
  const MemKind kind = inDev || outDev ? MemKind::Device : MemKind::Host;
  // A pre-mul op's scalar "in device memory" (collScalarDevice) is read where
  // the reduction runs: by the host for host buffers, by the GPU for device
  // buffers.  The other way round would fault.
  if (r.op >= collNumOps && (r.kind == sched::CollKind::AllReduce || r.kind == sched::CollKind::ReduceScatter ||
                             r.kind == sched::CollKind::Reduce)) {
    const std::optional<RedOpTable::Entry> e = preMulOf(comm, r);  // validated
    if (e && e->residence == collScalarDevice) {
      const bool scalarDev = bufferKind(r.scalarAt != nullptr ? r.scalarAt : e->pointer).kind == MemKind::Device;
      if (scalarDev != (kind == MemKind::Device))
        return makeError(collInvalidArgument, "{}: op {}'s scalar (collScalarDevice) is {} memory but the buffers are {} "
                         "memory; they must match", r.api, r.op, scalarDev ? "device" : "host",
                         kind == MemKind::Device ? "device" : "host");
    }
  }
  return kind;
}

}  // namespace coll::core
