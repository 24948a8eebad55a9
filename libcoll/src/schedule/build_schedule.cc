// build_schedule.cc — the (collective, algorithm) table: which exist, and
// the dispatch to the schedule functions (one file per algorithm).
#include <stdexcept>
#include <string>

#include "schedule/chunking.h"
#include "schedule/schedules.h"

namespace coll::sched {

bool algoSupports(CollKind k, Algo a) {
  switch (k) {
    case CollKind::AllReduce:
      return a == Algo::Ring || a == Algo::Tree || a == Algo::OneShot || a == Algo::Doubling || a == Algo::Halving;
    case CollKind::AllGather: return a == Algo::Ring || a == Algo::OneShot || a == Algo::Doubling;
    case CollKind::ReduceScatter: return a == Algo::Ring || a == Algo::OneShot || a == Algo::Halving;
    case CollKind::Broadcast: return a == Algo::Pipeline || a == Algo::Tree || a == Algo::OneShot;
    case CollKind::Reduce: return a == Algo::Pipeline;
    case CollKind::Send:
    case CollKind::Recv: return a == Algo::Direct;
  }
  return false;
}

bool algoInPlaceSafe(CollKind k, Algo a, int nranks) {
  if (!algoSupports(k, a)) return false;
  if (k == CollKind::Send || k == CollKind::Recv) return false;  // no in-place form
  if (k == CollKind::AllReduce && a == Algo::OneShot) return nranks <= 2;
  return true;
}

int minFifoSlots(CollKind k, Algo a) {
  (void)k;
  return a == Algo::Ring ? 2 : 1;
}

Schedule buildSchedule(CollKind k, Algo a, int rank, int nranks, int root, size_t count,
                       const Chunking& c) {
  if (!algoSupports(k, a))
    throw std::invalid_argument(std::string("no algorithm ") + algoName(a) + " for " +
                                collKindName(k));
  switch (k) {
    case CollKind::AllReduce:
      if (a == Algo::Ring) return ringAllReduce(rank, nranks, count, c);
      if (a == Algo::Tree) return treeAllReduce(rank, nranks, count, c);
      if (a == Algo::Doubling) return doublingAllReduce(rank, nranks, count, c);
      if (a == Algo::Halving) return halvingAllReduce(rank, nranks, count, c);
      return oneShotAllReduce(rank, nranks, count, c);
    case CollKind::AllGather:
      if (a == Algo::Ring) return ringAllGather(rank, nranks, count, c);
      if (a == Algo::Doubling) return doublingAllGather(rank, nranks, count, c);
      return oneShotAllGather(rank, nranks, count, c);
    case CollKind::ReduceScatter:
      if (a == Algo::OneShot) return oneShotReduceScatter(rank, nranks, count, c);
      if (a == Algo::Halving) return halvingReduceScatter(rank, nranks, count, c);
      return ringReduceScatter(rank, nranks, count, c);
    case CollKind::Broadcast:
      if (a == Algo::Pipeline) return pipelineBroadcast(rank, nranks, root, count, c);
      if (a == Algo::Tree) return treeBroadcast(rank, nranks, root, count, c);
      return oneShotBroadcast(rank, nranks, root, count, c);
    case CollKind::Reduce: return pipelineReduce(rank, nranks, root, count, c);
    case CollKind::Send:
    case CollKind::Recv:
      detail::validateCommon(rank, nranks, c);
      detail::validateRoot(root, nranks, "peer");
      return k == CollKind::Send ? directSend(rank, root, count, c)
                                 : directRecv(rank, root, count, c);
  }
  throw std::invalid_argument("unknown collective");
}

}  // namespace coll::sched
