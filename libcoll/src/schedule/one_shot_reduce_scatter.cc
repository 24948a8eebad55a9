// one_shot_reduce_scatter.cc — every rank sends each peer's block straight
// to that peer, and reduces the N-1 blocks it receives into its own: one
// hop instead of the ring's N-1, the ring's bytes, for calls too small for
// the ring's pipeline to pay (the reduce-scatter twin of
// one_shot_all_gather.cc).
//
// count is the per-rank receive count; Input holds N blocks, block b (the
// part rank b receives) at b*count.  Channel ch owns the same contiguous
// part of every block, cut into k chunks of <= E elements.  Steps of rank r
// per chunk, s = +1 on even channels and -1 on odd ones:
//   Send block r+js's chunk (Input, pre) -> r+js      for j = 1..N-1 (mod N)
//   RecvReduceCopy <- r-s,  Input block r (pre)  -> Output
//   RecvReduceCopy <- r-js, Output               -> Output  for j = 2..N-1
//   (the last combine is final)
// so each rank's first message goes to the peer whose first receive
// expects it, and no peer is everybody's first target.  Rank r's sum is
// x_r + x_(r-s) + x_(r-2s) + ...: every term once, in a fixed order per
// rank (the result lives on one rank only, so no two ranks must agree bit
// for bit).
//
//   N = 3, rank 0:  Send b1 ->1, b2 ->2;  acc = x0[b0] + <-2;  acc += <-1 (final)
//
// In place (Output == Input + r*count): the first combine reads and writes
// the same elements of block r, the later ones Output only, and the sends
// read the other blocks, which nothing writes.  A rank's sends of a chunk
// wait only for the receives of the chunk before, so one FIFO slot per
// link suffices.
//
// Bytes sent per rank: (N-1) * count * elemBytes = (N-1)/N * S, the ring's
// (S = N*count*elemBytes, as nccl-tests counts it); received: the same.
// Cost: T = k*alpha + 2(N-2)k*o + (N-1)/N * S * beta  (k chunks per
// channel; a chunk's receives wait for its sends, so chunks are not
// overlapped).
// N == 1: one final Copy Input -> Output per chunk.
#include "schedule/chunking.h"
#include "schedule/schedules.h"

namespace coll::sched {

using detail::Range;

Schedule oneShotReduceScatter(int rank, int nranks, size_t count, const Chunking& c) {
  detail::validateCommon(rank, nranks, c);
  return detail::perChannel(count, c, [&](const detail::ChannelCut& cut, std::vector<Step>& steps) {
    const int s = cut.ch % 2 == 0 ? 1 : nranks - 1;  // +1 or -1, mod N
    auto to = [&](int j) { return static_cast<int>((rank + static_cast<long>(j) * s) % nranks); };
    auto from = [&](int j) { return static_cast<int>((rank + static_cast<long>(nranks - j) * s) % nranks); };
    auto blockOff = [&](int b, const Range& r) { return static_cast<size_t>(b) * count + r.off; };

    for (size_t i = 0; i < cut.k; ++i) {
      const Range r = cut.chunk(i);
      if (nranks == 1) {
        steps.push_back(detail::placed(
            Step{.kind = StepKind::Copy, .src = Buf::Input, .dst = Buf::Output, .final = true}, blockOff(rank, r),
            r.off, r.len));
        continue;
      }
      for (int j = 1; j < nranks; ++j)
        steps.push_back(detail::placed(Step{.kind = StepKind::Send, .src = Buf::Input, .sendPeer = to(j)},
                                       blockOff(to(j), r), 0, r.len));
      steps.push_back(detail::placed(Step{.kind = StepKind::RecvReduceCopy, .src = Buf::Input, .dst = Buf::Output,
                                          .final = nranks == 2, .recvPeer = from(1)},
                                     blockOff(rank, r), r.off, r.len));
      for (int j = 2; j < nranks; ++j)
        steps.push_back(detail::placed(Step{.kind = StepKind::RecvReduceCopy, .src = Buf::Output, .dst = Buf::Output,
                                            .final = j == nranks - 1, .recvPeer = from(j)},
                                       r.off, r.off, r.len));
    }
  });
}

}  // namespace coll::sched
