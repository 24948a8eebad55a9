// halving_reduce_scatter.cc — reduce-scatter by recursive halving: log2 P
// rounds, one partner each, the ring's bytes.  One-shot sends N-1 messages
// per rank and the ring takes N-1 hops in turn; where every message costs a
// wake-up of a rank that shares the cores (loopback TCP, 8 ranks on 2
// cores: one-shot 175 us, Open MPI's halving 120 us for 1 KiB), log2 P
// messages win.
//
// The P participants of doubling_shape.h (pairs folded for N that is not a
// power of two) own the blocks [blockLo(v), blockLo(v+1)): one, or two for
// a rank that holds its folded-out partner's block too.  Per chunk (the
// same range r of every block):
//   fold in:  a folded-out rank sends all N blocks to rank+1, which reduces
//             them with its Input into Scratch;
//   rounds:   d = P/2, P/4, ..., 1, partner p = rankOf(v ^ d): of the 2d
//             participants [lo, lo+2d) (lo = v & ~(2d-1)) still being
//             reduced, send p the blocks of the half v does not keep and
//             reduce p's partials of the half it keeps, acc (Input before
//             the first round, Scratch after) -> Scratch; in the last round
//             (d = 1) the own block goes to Output and is final;
//   fold out: a rank that folds in finishes its partner's block in Scratch
//             and sends it back; the folded-out rank receives it into Output.
// Each rank's final sum is reduced in the order of its rounds; the result
// lives on one rank only, so no two ranks must agree bit for bit (checked to
// a tolerance, like the ring's).
//
// A range of blocks is one message when the chunk is whole blocks (one
// chunk on one channel, the tuner's use) and they fit a chunk of E
// elements; otherwise steps of as many whole blocks as fit, or one per
// block, cut the same on both sides.  The last round is always cut per block (the
// own block goes to Output, a folded partner's to Scratch).  In a round the
// sends and receives alternate, so one FIFO slot per link suffices.
//
// Scratch mirrors Input's layout from the first block the rank keeps:
// N blocks on a rank that folds in, the first round's half otherwise (none
// at P = 2 without a fold).  In place (Output = Input + rank*count): Output
// is written only by the own block's last receive, after every read of it.
//
//   N = 4, rank 0, one chunk (blocks b0..b3):
//     Send b2,b3 ->2; Scratch[b0,b1] = x0 + <-2;
//     Send Scratch[b1] ->1; Output = Scratch[b0] + <-1 (final)
//
// Cost: H k alpha + ((P-1)/P + [rem>0] (1 + 1/N)) S beta, H = log2 P (+2
// with a fold), k chunks per channel.  N == 1: one final Copy.
#include <algorithm>

#include "schedule/chunking.h"
#include "schedule/doubling_shape.h"
#include "schedule/schedules.h"

namespace coll::sched {

using detail::Range;

Schedule halvingReduceScatter(int rank, int nranks, size_t count, const Chunking& c) {
  detail::validateCommon(rank, nranks, c);
  const DoublingShape shape(nranks);
  const int P = shape.P;
  const bool foldsIn = shape.foldsIn(rank), foldedOut = shape.foldedOut(rank);
  const int v = foldedOut ? -1 : shape.virtualOf(rank);
  // Scratch offset = Input offset - scratchBase.
  size_t scratchBase = 0;
  if (!foldsIn && !foldedOut && P > 1) {
    const int d = P / 2, lo = v & ~(2 * d - 1);
    scratchBase = static_cast<size_t>(shape.blockLo((v & d) == 0 ? lo : lo + d)) * count;
  }

  Schedule out = detail::perChannel(count, c, [&](const detail::ChannelCut& cut, std::vector<Step>& steps) {
    for (size_t i = 0; i < cut.k; ++i) {
      const Range r = cut.chunk(i);
      const bool whole = r.off == 0 && r.len == count;
      // Chunk r of blocks [a, b): ranges of as many whole blocks as fit a
      // chunk of E elements when the chunk is whole blocks and the caller
      // does not ask for one per block, else one range per block.
      const size_t perStep = whole ? std::max<size_t>(1, cut.E / count) : 1;
      auto pieces = [&](int a, int b, bool perBlock) {
        std::vector<Range> list;
        const int step = perBlock ? 1 : static_cast<int>(std::min<size_t>(perStep, static_cast<size_t>(nranks)));
        for (int j = a; j < b; j += step) {
          const int n = std::min(step, b - j);
          list.push_back(Range{static_cast<size_t>(j) * count + r.off, n == 1 ? r.len : static_cast<size_t>(n) * count});
        }
        return list;
      };
      if (nranks == 1) {
        steps.push_back(detail::placed(
            Step{.kind = StepKind::Copy, .src = Buf::Input, .dst = Buf::Output, .final = true}, r.off, r.off, r.len));
        continue;
      }
      if (foldedOut) {
        for (const Range& p : pieces(0, nranks, false))
          steps.push_back(detail::placed(Step{.kind = StepKind::Send, .src = Buf::Input, .sendPeer = rank + 1},
                                         p.off, 0, p.len));
        steps.push_back(detail::placed(Step{.kind = StepKind::Recv, .dst = Buf::Output, .recvPeer = rank + 1}, 0,
                                       r.off, r.len));
        continue;
      }
      Buf acc = Buf::Input;
      if (foldsIn) {
        for (const Range& p : pieces(0, nranks, false))
          steps.push_back(detail::placed(
              Step{.kind = StepKind::RecvReduceCopy, .src = Buf::Input, .dst = Buf::Scratch, .recvPeer = rank - 1},
              p.off, p.off - scratchBase, p.len));
        acc = Buf::Scratch;
      }
      auto accOff = [&](size_t off) { return acc == Buf::Scratch ? off - scratchBase : off; };
      for (int d = P / 2; d >= 1; d /= 2) {
        const int partner = shape.rankOf(v ^ d);
        const int lo = v & ~(2 * d - 1);
        const bool keepLow = (v & d) == 0;
        const int keepV = keepLow ? lo : lo + d, giveV = keepLow ? lo + d : lo;
        const bool last = d == 1;
        const std::vector<Range> give = pieces(shape.blockLo(giveV), shape.blockLo(giveV + d), last);
        const std::vector<Range> keep = pieces(shape.blockLo(keepV), shape.blockLo(keepV + d), last);
        for (size_t j = 0; j < std::max(give.size(), keep.size()); ++j) {
          if (j < give.size())
            steps.push_back(detail::placed(Step{.kind = StepKind::Send, .src = acc, .sendPeer = partner},
                                           accOff(give[j].off), 0, give[j].len));
          if (j >= keep.size()) continue;
          const Range& k = keep[j];
          const bool own = last && k.off / count == static_cast<size_t>(rank);
          Step s{.kind = StepKind::RecvReduceCopy, .src = acc, .dst = own ? Buf::Output : Buf::Scratch,
                 .final = last, .recvPeer = partner};
          steps.push_back(detail::placed(s, accOff(k.off), own ? r.off : k.off - scratchBase, k.len));
        }
        acc = Buf::Scratch;
      }
      if (foldsIn) {  // the partner's block, finished in Scratch in the last round
        const size_t off = static_cast<size_t>(rank - 1) * count + r.off;
        steps.push_back(detail::placed(Step{.kind = StepKind::Send, .src = Buf::Scratch, .sendPeer = rank - 1},
                                       off - scratchBase, 0, r.len));
      }
    }
  });
  for (const ChannelSchedule& ch : out.channels)
    for (const Step& s : ch.steps) {
      if (stepWritesDst(s.kind) && s.dst == Buf::Scratch) out.scratchElems = std::max(out.scratchElems, s.dstOff + s.count);
      if (stepReadsSrc(s.kind) && s.src == Buf::Scratch) out.scratchElems = std::max(out.scratchElems, s.srcOff + s.count);
    }
  return out;
}

}  // namespace coll::sched
