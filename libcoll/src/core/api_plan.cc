// api_plan.cc — collGetPlanInfo: the tuner's decision for a call and the
// alpha-beta terms behind it (coll.h).
#include <cstdio>
#include <cstring>

#include "coll/kernels/reduce.h"
#include "core/api_guard.h"
#include "core/op_request.h"
#include "schedule/cost.h"

using coll::Status;
using coll::enumBits;
using coll::sched::CollKind;
namespace core = coll::core;
namespace sched = coll::sched;

static_assert(static_cast<int>(CollKind::AllReduce) == collCollAllReduce);
static_assert(static_cast<int>(CollKind::AllGather) == collCollAllGather);
static_assert(static_cast<int>(CollKind::ReduceScatter) == collCollReduceScatter);
static_assert(static_cast<int>(CollKind::Broadcast) == collCollBroadcast);
static_assert(static_cast<int>(CollKind::Reduce) == collCollReduce);
static_assert(static_cast<int>(CollKind::Send) == collCollSend);
static_assert(static_cast<int>(CollKind::Recv) == collCollRecv);

namespace {

template <size_t N>
void copyText(char (&dst)[N], const char* src) {
  std::snprintf(dst, N, "%s", src);
}

Status planInfo(collComm* comm, int collective, size_t count, int dtype, int root, collPlanInfo_t* info) {
  static const char* const kApi = "collGetPlanInfo";
  if (info == nullptr) return coll::makeError(collInvalidArgument, "{}: info is NULL", kApi);
  if (collective < 0 || collective >= collNumCollectives)
    return coll::makeError(collInvalidArgument, "{}: collective {} is not a collCollective_t (0..{})", kApi, collective,
                           collNumCollectives - 1);
  core::OpRequest r;
  r.api = kApi;
  r.kind = static_cast<CollKind>(collective);
  r.count = count;
  r.dtype = dtype;
  const bool rooted = r.kind == CollKind::Broadcast || r.kind == CollKind::Reduce || r.kind == CollKind::Send ||
                      r.kind == CollKind::Recv;
  r.root = rooted ? root : -1;  // the plan cache's key, as submit() uses it
  if (Status s = core::validateShape(comm, r); !s.isOk()) return s;

  const size_t es = coll::kernels::dtypeSize(static_cast<coll::kernels::DType>(dtype));
  const coll::tune::TunerInputs& in = comm->tuner->inputs();
  std::memset(info, 0, sizeof *info);
  info->nranks = comm->nranks;
  copyText(info->transport, comm->transport ? comm->transport->name() : "none");
  info->alpha = in.cost.alpha;
  info->beta = in.cost.beta;
  info->overhead = in.cost.overhead;
  info->handoff = in.handoff;
  info->sharedCpus = in.sharedCpus;
  copyText(info->costSource, in.costSource.c_str());
  info->bytes = coll::tune::collBytes(r.kind, count, es, comm->nranks);
  const bool self = (r.kind == CollKind::Send || r.kind == CollKind::Recv) && r.root == comm->rank;
  if (count == 0 || self) {
    // submit() moves no message for these (count 0: NCCL returns at once;
    // to self: a copy at group end).
    copyText(info->algorithm, "none");
    copyText(info->formula, "0");
    return Status::ok();
  }
  const coll::tune::Decision d = core::decisionFor(comm, r.kind, count, es, r.root);
  copyText(info->algorithm, sched::algoName(d.algo));
  info->forced = d.forced ? 1 : 0;
  info->nChannels = d.chunking.nchannels;
  info->chunkBytes = d.chunking.chunkElems * es;
  info->chunks = d.terms.chunks;
  info->hops = d.terms.hops;
  info->byteTerm = d.terms.byteTerm;
  info->alphaSeconds = d.terms.hops * in.cost.alpha;
  info->betaSeconds = d.terms.byteTerm * in.cost.beta;
  info->extraMessages = d.terms.extraMessages;
  info->overheadSeconds = d.terms.extraMessages * in.cost.overhead;
  info->handoffSeconds = d.terms.hops * in.handoff;
  info->predictedSeconds = d.predictedSeconds;
  copyText(info->formula, sched::costFormula(r.kind, d.algo));
  return Status::ok();
}

}  // namespace

extern "C" collResult_t collGetPlanInfo(collComm_t comm, collCollective_t collective, size_t count,
                                        collDataType_t datatype, int root, collPlanInfo_t* info) {
  Status s = core::checkComm(comm, "collGetPlanInfo");
  if (!s.isOk()) return core::fail(nullptr, s);
  const int coll = enumBits(collective), dtype = enumBits(datatype);
  // Argument errors leave the comm usable (core::fail only poisons it for
  // communication failures).
  return core::guard(comm, [&] { return planInfo(comm, coll, count, dtype, root, info); });
}
