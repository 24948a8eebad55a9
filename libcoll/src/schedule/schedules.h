// schedules.h — every algorithm as a pure function to a Schedule.
//
// Counts follow the C API: allReduce/broadcast/reduce take the full count;
// allGather takes the per-rank send count (output holds nranks*count);
// reduceScatter takes the per-rank recv count (input holds nranks*count).
// Offsets in steps are element offsets into the rank's Input/Output buffer.
// In-place calls use the same schedules: the executor aliases the buffers.
#pragma once

#include "schedule/step.h"

namespace coll::sched {

enum class CollKind : uint8_t {
  AllReduce = 0, AllGather = 1, ReduceScatter = 2, Broadcast = 3, Reduce = 4,
  Send = 5, Recv = 6,
};
const char* collKindName(CollKind k);  // "allreduce", "allgather", ...
// Whether the collective combines values with a reduction op (all-reduce,
// reduce-scatter, reduce).
constexpr bool reduces(CollKind k) {
  return k == CollKind::AllReduce || k == CollKind::ReduceScatter || k == CollKind::Reduce;
}

enum class Algo : uint8_t { Ring = 0, Tree = 1, OneShot = 2, Pipeline = 3, Direct = 4, Doubling = 5, Halving = 6 };
// "ring", "tree", "oneshot", "pipeline", "direct", "doubling", "halving"
const char* algoName(Algo a);

// Which algorithms exist for a collective (the tuner picks among these).
bool algoSupports(CollKind k, Algo a);

// Whether (k, a) on nranks ranks gives correct results when the executor
// aliases Input and Output (in-place call).  False for one-shot all-reduce
// with nranks >= 3 (no scratch to keep x_r while the partial sum of the
// lower ranks builds up in Output: see one_shot_all_reduce.cc), and for
// Send/Recv (no in-place form).  The executor must give such calls a
// separate Input.
bool algoInPlaceSafe(CollKind k, Algo a, int nranks);

// The fewest message slots per (channel, sender -> receiver) FIFO with which
// every schedule of (k, a) completes.  2 for Ring: each ring step receives
// and sends, so with one slot per link every link is full after the first
// Send and no rank can go on.  1 for the others.  (Checked by the schedule
// simulator for N <= 17.)
int minFifoSlots(CollKind k, Algo a);

// Builds the schedule of (k, a) for one rank; count as in the C API; root
// for Broadcast/Reduce, peer for Send/Recv (passed in `root`).  Throws
// std::invalid_argument for an unsupported (k, a), nranks < 1, rank or
// root/peer outside [0, nranks), nchannels < 1 or chunkElems == 0.
Schedule buildSchedule(CollKind k, Algo a, int rank, int nranks, int root,
                       size_t count, const Chunking& c);

Schedule ringAllReduce(int rank, int nranks, size_t count, const Chunking& c);
Schedule treeAllReduce(int rank, int nranks, size_t count, const Chunking& c);
Schedule oneShotAllReduce(int rank, int nranks, size_t count, const Chunking& c);
Schedule doublingAllReduce(int rank, int nranks, size_t count, const Chunking& c);
Schedule halvingAllReduce(int rank, int nranks, size_t count, const Chunking& c);
Schedule ringAllGather(int rank, int nranks, size_t count, const Chunking& c);
Schedule oneShotAllGather(int rank, int nranks, size_t count, const Chunking& c);
Schedule doublingAllGather(int rank, int nranks, size_t count, const Chunking& c);
Schedule ringReduceScatter(int rank, int nranks, size_t count, const Chunking& c);
Schedule oneShotReduceScatter(int rank, int nranks, size_t count, const Chunking& c);
Schedule halvingReduceScatter(int rank, int nranks, size_t count, const Chunking& c);
Schedule pipelineBroadcast(int rank, int nranks, int root, size_t count, const Chunking& c);
Schedule oneShotBroadcast(int rank, int nranks, int root, size_t count, const Chunking& c);
Schedule treeBroadcast(int rank, int nranks, int root, size_t count, const Chunking& c);
Schedule pipelineReduce(int rank, int nranks, int root, size_t count, const Chunking& c);
Schedule directSend(int rank, int peer, size_t count, const Chunking& c);
Schedule directRecv(int rank, int peer, size_t count, const Chunking& c);

}  // namespace coll::sched
