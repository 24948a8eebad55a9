// halving_all_reduce.cc — Rabenseifner's all-reduce: a reduce-scatter by
// recursive halving, then an all-gather by recursive doubling, among the P
// participants of doubling_shape.h (pairs folded for N that is not a power
// of two).  It moves the ring's bytes (2(P-1)/P S per rank) in 2 log2 P
// hops where the ring takes 2(N-1), and log2 P times fewer bytes per round
// than recursive doubling, so it fills the sizes between the two.
//
// Per chunk (a range of the buffer, cut into P segments seg(0..P-1) with
// splitEven; participant v owns segment v at the end of the first half):
//   reduce-scatter, d = P/2, P/4, ..., 1, partner p = rankOf(v ^ d):
//     of the 2d segments [lo, lo+2d) still being reduced (lo = v & ~(2d-1)),
//     Send the half v does not keep -> p, then RecvReduceCopy the half it
//     keeps <- p, with acc (Input in the first round, Output after); the
//     last of these (segment v alone) is final;
//   all-gather, d = 1, 2, ..., P/2: Send the d segments v holds -> p, Recv
//     the d segments p holds <- p (into Output);
//   fold, as in doubling_all_reduce.cc: a folded-out rank sends its Input
//   to its partner before and receives the whole result after.
// Both sides of each swap split the same segments, and skip the empty ones
// (count < P), alike.  Every op is commutative bit for bit and each segment
// is reduced in the same pairing order on whichever rank owns it, then
// copied: all ranks end bit-identical.  A Send reads a range that no later
// step of the rank reads as an operand again, and every reducing step reads
// and writes the same offsets: in-place safe.  Each rank sends before it
// receives in every round: one FIFO slot per link suffices.
//
//   N = 4, rank 0, one chunk of 8 elements (segments of 2):
//     Send [4,8) ->2; [0,4) = x0 + <-2;  Send [2,4) ->1; [0,2) += <-1 (final);
//     Send [0,2) ->1; Recv [2,4) <-1;  Send [0,4) ->2; Recv [4,8) <-2
//
// Cost: H k alpha + (2 (P-1)/P + 2 [rem > 0]) S beta, H = 2 log2 P (+2
// with a fold), k chunks per channel (a chunk's rounds do not overlap the
// next chunk's).
// N == 1: one final Copy Input -> Output per chunk.
#include "schedule/reducing_fold.h"
#include "schedule/schedules.h"

namespace coll::sched {

using detail::Range;

Schedule halvingAllReduce(int rank, int nranks, size_t count, const Chunking& c) {
  detail::validateCommon(rank, nranks, c);
  const DoublingShape shape(nranks);
  const size_t P = static_cast<size_t>(shape.P);
  return detail::perChannel(count, c, [&](const detail::ChannelCut& cut, std::vector<Step>& steps) {
    for (size_t i = 0; i < cut.k; ++i) {
      const Range r = cut.chunk(i);
      Buf acc;
      if (detail::openReducingFold(steps, shape, rank, r, &acc)) continue;
      // Segments [a, b) of this chunk as one range of the buffer.
      auto segs = [&](size_t a, size_t b) {
        const size_t from = detail::splitEven(r.len, P, a).off;
        const size_t to = b == P ? r.len : detail::splitEven(r.len, P, b).off;
        return Range{r.off + from, to - from};
      };
      // Appends s over `range` unless it is empty (both sides skip alike).
      auto over = [&](Step s, const Range& range) {
        if (range.len > 0) steps.push_back(detail::placed(s, range.off, range.off, range.len));
      };
      const size_t v = static_cast<size_t>(shape.virtualOf(rank));
      for (size_t d = P / 2; d >= 1; d /= 2) {  // reduce-scatter by halving
        const int partner = shape.rankOf(static_cast<int>(v ^ d));
        const size_t lo = v & ~(2 * d - 1);
        const bool keepLow = (v & d) == 0;
        const Range keep = keepLow ? segs(lo, lo + d) : segs(lo + d, lo + 2 * d);
        const Range give = keepLow ? segs(lo + d, lo + 2 * d) : segs(lo, lo + d);
        over(Step{.kind = StepKind::Send, .src = acc, .sendPeer = partner}, give);
        over(Step{.kind = StepKind::RecvReduceCopy, .src = acc, .dst = Buf::Output, .final = d == 1,
                  .recvPeer = partner},
             keep);
        acc = Buf::Output;
      }
      for (size_t d = 1; d < P; d *= 2) {  // all-gather by doubling
        const int partner = shape.rankOf(static_cast<int>(v ^ d));
        const size_t mine = v & ~(d - 1), theirs = mine ^ d;
        over(Step{.kind = StepKind::Send, .src = Buf::Output, .sendPeer = partner}, segs(mine, mine + d));
        over(Step{.kind = StepKind::Recv, .dst = Buf::Output, .recvPeer = partner}, segs(theirs, theirs + d));
      }
      detail::closeReducingFold(steps, shape, rank, r);
    }
  });
}

}  // namespace coll::sched
