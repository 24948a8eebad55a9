// ring_reduce_scatter.cc — ring reduce-scatter, chunked and pipelined.
//
// count is the per-rank receive count; Input holds N blocks, block b (the
// part rank b receives) at b*count.  Channel ch owns the same contiguous
// part of every block; its part is cut into chunks of <= E elements.
//
// Steps of the rank at ring position p, per chunk (N-1 messages):
//   t = 0         Send            block rankAt(p-1)  Input (pre)     -> next
//   t = 1..N-2    RecvReduceSend  block rankAt(p-t-1) Input (pre)    prev -> next
//   t = N-1       RecvReduceCopy  block rank          Input (pre), final -> Output
// Block b is reduced along the ring starting at the rank after b and ends,
// final, on rank b itself: every element is reduced exactly once.
//
//   N = 3, forward ring, block 0:   1 -x1-> 2 -(x1+x2)-> 0: x0+(x1+x2) final
//
// Bytes sent per rank: (N-1) * count * elemBytes = (N-1)/N * S, with S =
// N*count*elemBytes (the input size, as nccl-tests counts it).
// Cost: T = (N-1)*k*alpha + (N-1)/N * S * beta  (k chunks per channel).
// N == 1: one final Copy Input -> Output per chunk.
#include "schedule/chunking.h"
#include "schedule/ring.h"
#include "schedule/schedules.h"

namespace coll::sched {

using detail::Range;

Schedule ringReduceScatter(int rank, int nranks, size_t count, const Chunking& c) {
  detail::validateCommon(rank, nranks, c);
  return detail::perChannel(count, c, [&](const detail::ChannelCut& cut, std::vector<Step>& steps) {
    const detail::Ring ring = detail::ringForChannel(nranks, cut.ch, c.ringOrder);
    const int p = ring.pos(rank);
    const int next = ring.next(rank), prev = ring.prev(rank);

    for (size_t i = 0; i < cut.k; ++i) {
      const Range r = cut.chunk(i);
      const size_t o = r.off;
      auto blockOff = [&](int b) { return static_cast<size_t>(b) * count + o; };
      if (nranks == 1) {
        steps.push_back(detail::placed(Step{.kind = StepKind::Copy, .src = Buf::Input,
                                            .dst = Buf::Output, .final = true},
                                       blockOff(rank), o, r.len));
        continue;
      }
      steps.push_back(detail::placed(
          Step{.kind = StepKind::Send, .src = Buf::Input, .sendPeer = next},
          blockOff(ring.rankAt(p - 1L)), 0, r.len));
      for (int t = 1; t <= nranks - 2; ++t)
        steps.push_back(detail::placed(Step{.kind = StepKind::RecvReduceSend, .src = Buf::Input,
                                            .recvPeer = prev, .sendPeer = next},
                                       blockOff(ring.rankAt(p - t - 1L)), 0, r.len));
      steps.push_back(detail::placed(Step{.kind = StepKind::RecvReduceCopy, .src = Buf::Input,
                                          .dst = Buf::Output, .final = true, .recvPeer = prev},
                                     blockOff(rank), o, r.len));
    }
  });
}

}  // namespace coll::sched
