// one_shot_all_gather.cc — every rank sends its block straight to every
// other rank: one hop instead of the ring's N-1, for calls too small for
// the ring's pipeline to pay.
//
// count is the per-rank send count; Output holds N blocks, block b at
// b*count.  Channel ch owns the same contiguous part of every block, cut
// into k chunks of <= E elements.  Steps of rank r per chunk:
//   Send own chunk from Input -> r+s, r+2s, ..., r+(N-1)s   (mod N)
//   Recv chunk of block r-s  -> Output, then r-2s, ..., r-(N-1)s
// with s = +1 on even channels and -1 on odd ones, so each rank's first
// message goes to the peer whose first receive expects it, and no peer is
// everybody's first target.  After all chunks, per chunk: Copy own chunk
// Input -> Output block r (local; harmless in place, where Input ==
// Output + r*count).
//
//   N = 3, rank 0:  Send b0 ->1, ->2;  Recv b2 (from 2), b1 (from 1);  Copy b0
//
// A rank's sends of a chunk wait only for the receives of the chunk before,
// so one FIFO slot per link suffices.
//
// Bytes sent per rank: (N-1) * count * elemBytes = (N-1)/N * S, the same as
// the ring (S = N*count*elemBytes, as nccl-tests counts it); received: the
// same.  Cost: T = k*alpha + (N-1)/N * S * beta  (k chunks per channel; a
// chunk's receives wait for its sends, so chunks are not overlapped).
// N == 1: Copy Input -> Output only.
#include "schedule/chunking.h"
#include "schedule/schedules.h"

namespace coll::sched {

using detail::Range;

Schedule oneShotAllGather(int rank, int nranks, size_t count, const Chunking& c) {
  detail::validateCommon(rank, nranks, c);
  return detail::perChannel(count, c, [&](const detail::ChannelCut& cut, std::vector<Step>& steps) {
    const int s = cut.ch % 2 == 0 ? 1 : nranks - 1;  // +1 or -1, mod N
    auto peerAt = [&](int j) { return static_cast<int>((rank + static_cast<long>(j) * s) % nranks); };
    auto from = [&](int j) { return static_cast<int>((rank + static_cast<long>(nranks - j) * s) % nranks); };

    for (size_t i = 0; i < cut.k && nranks > 1; ++i) {
      const Range r = cut.chunk(i);
      const size_t o = r.off;
      for (int j = 1; j < nranks; ++j)
        steps.push_back(detail::placed(Step{.kind = StepKind::Send, .src = Buf::Input, .sendPeer = peerAt(j)},
                                       o, 0, r.len));
      for (int j = 1; j < nranks; ++j) {
        const int b = from(j);
        steps.push_back(detail::placed(Step{.kind = StepKind::Recv, .dst = Buf::Output, .recvPeer = b}, 0,
                                       static_cast<size_t>(b) * count + o, r.len));
      }
    }
    detail::appendOwnCopies(steps, cut, static_cast<size_t>(rank) * count);
  });
}

}  // namespace coll::sched
