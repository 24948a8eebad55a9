// ring_all_gather.cc — ring all-gather, chunked and pipelined.
//
// count is the per-rank send count; Output holds N blocks, block b (rank
// b's data) at b*count.  Channel ch owns the same contiguous part of every
// block (splitEven over nchannels); a channel's part is cut into chunks of
// <= E elements (E = chunkElems rounded down to a multiple of 16 when >= 16).
//
// Steps of the rank at ring position p, per chunk (N-1 messages):
//   t = 0         Send         own chunk from Input         -> next
//   t = 1..N-2    RecvCopySend block rankAt(p-t)            prev -> Output, next
//   t = N-1       Recv         block rankAt(p+1)            prev -> Output
// and after all chunks, per chunk: Copy own chunk Input -> Output block rank
// (local, off the ring's critical path; harmless in place, where Input ==
// Output + rank*count).
//
//   N = 4, forward ring:   t=0      t=1      t=2      t=3
//     rank 0 sends         b0 ->1   b3 ->1   b2 ->1   (recv b1)
//     rank 1 sends         b1 ->2   b0 ->2   b3 ->2   (recv b2)
// Even channels use the ring r -> r+1, odd channels r -> r-1 (ring.h).
//
// Bytes sent per rank: (N-1) * count * elemBytes = (N-1)/N * S, with S =
// N*count*elemBytes (the output size, as nccl-tests counts it).
// Cost: T = (N-1)*k*alpha + (N-1)/N * S * beta  (k = chunks per channel, 1
// when chunkElems >= count/nchannels).
// N == 1: Copy Input -> Output only.
#include "schedule/chunking.h"
#include "schedule/ring.h"
#include "schedule/schedules.h"

namespace coll::sched {

using detail::Range;

Schedule ringAllGather(int rank, int nranks, size_t count, const Chunking& c) {
  detail::validateCommon(rank, nranks, c);
  return detail::perChannel(count, c, [&](const detail::ChannelCut& cut, std::vector<Step>& steps) {
    const detail::Ring ring = detail::ringForChannel(nranks, cut.ch, c.ringOrder);
    const int p = ring.pos(rank);
    const int next = ring.next(rank), prev = ring.prev(rank);

    for (size_t i = 0; i < cut.k; ++i) {
      const Range r = cut.chunk(i);
      const size_t o = r.off;
      auto blockOff = [&](int b) { return static_cast<size_t>(b) * count + o; };
      if (nranks == 1) continue;
      steps.push_back(detail::placed(
          Step{.kind = StepKind::Send, .src = Buf::Input, .sendPeer = next}, o, 0, r.len));
      for (int t = 1; t <= nranks - 2; ++t)
        steps.push_back(detail::placed(Step{.kind = StepKind::RecvCopySend, .dst = Buf::Output,
                                            .recvPeer = prev, .sendPeer = next},
                                       0, blockOff(ring.rankAt(p - t)), r.len));
      steps.push_back(detail::placed(
          Step{.kind = StepKind::Recv, .dst = Buf::Output, .recvPeer = prev}, 0,
          blockOff(ring.rankAt(p + 1L)), r.len));
    }
    detail::appendOwnCopies(steps, cut, static_cast<size_t>(rank) * count);
  });
}

}  // namespace coll::sched
