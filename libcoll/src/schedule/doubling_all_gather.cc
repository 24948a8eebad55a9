// doubling_all_gather.cc — recursive doubling: in round j every
// participating rank swaps all the blocks it holds with the rank whose
// virtual id differs in bit j, so what it holds doubles each round and
// after log2 P rounds it holds every block.  Each rank sends log2 P messages
// (for one chunk) where the ring and one-shot send N-1: for small calls,
// where a message's fixed cost is the price.  Rank layout, and the fold for
// N that is not a power of two, in doubling_shape.h; because a range of
// virtual ranks is one contiguous range of blocks, a round's data is one
// contiguous range of Output.
//
// count is the per-rank send count; Output holds N blocks, block b at
// b*count.  Channel ch owns the same contiguous part of every block, cut
// into k chunks of <= E elements.  Per chunk, rank r runs:
//   folded out (even r < 2 rem):  Send own chunk (Input) -> r+1;
//                                  Recv every block's chunk <- r+1
//   folds in (odd r < 2 rem):     Copy own chunk Input -> Output;
//                                  Recv block r-1's chunk <- r-1
//   participant, round j, d = 2^j, partner p = rankOf(v ^ d):
//     Send the chunks of the blocks of virtual ranks [g, g+d) -> p,
//     Recv those of [g', g'+d) <- p          (g = v & ~(d-1), g' = g ^ d)
//     (round 0 of a rank that holds one block sends it from Input, and
//     copies it to Output after that send; later rounds send from Output)
//   folds in:                     Send every block's chunk -> r-1
// A range of blocks goes as one step when the chunk is whole blocks (one
// channel, one chunk: what the tuner picks this for) and the range fits a
// chunk of E elements, else in steps of as many whole blocks as fit, or
// one step per block.  Send i and Recv i of a round alternate, so one FIFO
// slot per link suffices even when the two sides' ranges differ in size
// (a folded pair's virtual rank holds two blocks).
//
//   N = 4, rank 1:  round 0: Send b1 ->0;  Copy b1;  Recv b0 <-0
//                   round 1: Send b0..b1 ->3;  Recv b2..b3 <-3
//
// Bytes on the critical path: the fold's S/N and S, and (d + min(d, rem))
// S/N in round j (the first group of d virtual ranks is the largest);
// for N a power of two, (N-1)/N S, the ring's.  Cost:
// T = H k alpha + that S beta, H = log2 P (+2 with a fold).
// N == 1: Copy Input -> Output only.
#include <algorithm>

#include "schedule/chunking.h"
#include "schedule/doubling_shape.h"
#include "schedule/schedules.h"

namespace coll::sched {

using detail::Range;

namespace {

// The steps that move blocks [b0, b1)'s chunk `r` over one link, in order.
std::vector<Step> blockSteps(Step proto, int b0, int b1, const Range& r, size_t count, size_t E) {
  std::vector<Step> out;
  const bool wholeBlocks = r.off == 0 && r.len == count;
  const size_t perStep = wholeBlocks ? std::max<size_t>(1, E / count) : 1;
  for (int b = b0; b < b1;) {
    const int n = static_cast<int>(std::min<size_t>(perStep, static_cast<size_t>(b1 - b)));
    const size_t off = static_cast<size_t>(b) * count + r.off;
    const size_t len = wholeBlocks ? static_cast<size_t>(n) * count : r.len;
    out.push_back(detail::placed(proto, off, off, len));
    b += n;
  }
  return out;
}

// Send blocks [s0, s1) and receive [r0, r1) over the link to and from
// `peer`, the i-th send before the i-th receive.
void swapBlocks(std::vector<Step>& steps, Buf src, int peer, int s0, int s1, int r0, int r1, const Range& r,
                size_t count, size_t E) {
  const auto sends = blockSteps(Step{.kind = StepKind::Send, .src = src, .sendPeer = peer}, s0, s1, r, count, E);
  const auto recvs =
      blockSteps(Step{.kind = StepKind::Recv, .dst = Buf::Output, .recvPeer = peer}, r0, r1, r, count, E);
  for (size_t i = 0; i < std::max(sends.size(), recvs.size()); ++i) {
    if (i < sends.size()) steps.push_back(sends[i]);
    if (i < recvs.size()) steps.push_back(recvs[i]);
  }
}

}  // namespace

Schedule doublingAllGather(int rank, int nranks, size_t count, const Chunking& c) {
  detail::validateCommon(rank, nranks, c);
  const DoublingShape shape(nranks);
  return detail::perChannel(count, c, [&](const detail::ChannelCut& cut, std::vector<Step>& steps) {
    const size_t own = static_cast<size_t>(rank) * count;
    for (size_t i = 0; i < cut.k; ++i) {
      const Range r = cut.chunk(i);
      const Step copyOwn = detail::placed(Step{.kind = StepKind::Copy, .src = Buf::Input, .dst = Buf::Output},
                                          r.off, own + r.off, r.len);
      if (nranks == 1) {
        steps.push_back(copyOwn);
        continue;
      }
      if (shape.foldedOut(rank)) {
        steps.push_back(detail::placed(Step{.kind = StepKind::Send, .src = Buf::Input, .sendPeer = rank + 1},
                                       r.off, 0, r.len));
        for (const Step& s : blockSteps(Step{.kind = StepKind::Recv, .dst = Buf::Output, .recvPeer = rank + 1}, 0,
                                        nranks, r, count, cut.E))
          steps.push_back(s);
        continue;
      }
      const int v = shape.virtualOf(rank);
      bool copied = false;
      if (shape.foldsIn(rank)) {
        steps.push_back(copyOwn);
        copied = true;
        steps.push_back(detail::placed(Step{.kind = StepKind::Recv, .dst = Buf::Output, .recvPeer = rank - 1}, 0,
                                       static_cast<size_t>(rank - 1) * count + r.off, r.len));
      }
      for (int j = 0, d = 1; d < shape.P; ++j, d *= 2) {
        const int g = v & ~(d - 1), pg = g ^ d;
        const int partner = shape.rankOf(v ^ d);
        const int s0 = shape.blockLo(g), s1 = shape.blockLo(g + d);
        const int r0 = shape.blockLo(pg), r1 = shape.blockLo(pg + d);
        if (!copied) {
          // Round 0 of a rank with one block: send it from Input, then
          // copy it to Output (local) while the partner's block comes.
          steps.push_back(detail::placed(Step{.kind = StepKind::Send, .src = Buf::Input, .sendPeer = partner},
                                         r.off, 0, r.len));
          steps.push_back(copyOwn);
          copied = true;
          swapBlocks(steps, Buf::Output, partner, 0, 0, r0, r1, r, count, cut.E);
          continue;
        }
        swapBlocks(steps, Buf::Output, partner, s0, s1, r0, r1, r, count, cut.E);
      }
      if (shape.foldsIn(rank))
        for (const Step& s : blockSteps(Step{.kind = StepKind::Send, .src = Buf::Output, .sendPeer = rank - 1}, 0,
                                        nranks, r, count, cut.E))
          steps.push_back(s);
    }
  });
}

}  // namespace coll::sched
