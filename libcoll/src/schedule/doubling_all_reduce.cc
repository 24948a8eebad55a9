// doubling_all_reduce.cc — recursive doubling: in round j every
// participating rank swaps its whole partial result with the rank whose
// virtual id differs in bit j and combines the two, so after log2 P rounds
// every rank holds the full reduction.  Each rank sends log2 P messages per
// chunk where one-shot sends N-1, so it is for small calls where a
// message's fixed cost, not its bytes, is the price (what Open MPI uses for
// small all-reduces).  Rank layout, and the fold for N that is not a power
// of two, in doubling_shape.h.
//
// Channel ch owns a contiguous part of the buffer, cut into k chunks of <= E
// elements; per chunk, rank r runs:
//   folded out (even r < 2 rem):  Send Input (pre) -> r+1;
//                                  Recv the result <- r+1
//   folds in (odd r < 2 rem):     RecvReduceCopy <- r-1 with Input: acc
//   every participant, round j = 0 .. log2 P - 1, partner p = rankOf(v ^ 2^j):
//                                  Send acc -> p; RecvReduceCopy <- p with acc
//                                  (acc = Input before the first combine,
//                                  Output after; the last combine is final)
//   folds in:                     Send Output -> r-1
// The ops are commutative bit for bit (op(a,b) == op(b,a)), and both sides
// of a swap combine the same two values, so every rank ends bit-identical.
// A Send reads acc before the step after it overwrites it, and in place
// every step reads and writes the same offsets: in-place safe.
// Each link carries one message per chunk in each direction, and every
// rank sends before it receives, so one FIFO slot per link suffices.
//
//   N = 3 (P = 2, rem = 1):  rank 0: Send x0 ->1;  Recv <-1
//                            rank 1: acc = x0+x1 <-0;  Send acc ->2;  acc += <-2 (final);  Send ->0
//                            rank 2: Send x2 ->1;  x2 + <-1 (final)
//
// Bytes on the critical path: one chunk per hop, H = log2 P (+2 with a fold)
// hops.  Cost: T = H k alpha + H S beta.
// N == 1: one final Copy Input -> Output per chunk.
#include "schedule/reducing_fold.h"
#include "schedule/schedules.h"

namespace coll::sched {

using detail::Range;

Schedule doublingAllReduce(int rank, int nranks, size_t count, const Chunking& c) {
  detail::validateCommon(rank, nranks, c);
  const DoublingShape shape(nranks);
  return detail::perChannel(count, c, [&](const detail::ChannelCut& cut, std::vector<Step>& steps) {
    for (size_t i = 0; i < cut.k; ++i) {
      const Range r = cut.chunk(i);
      auto push = [&](Step s) { steps.push_back(detail::placed(s, r.off, r.off, r.len)); };
      Buf acc;
      if (detail::openReducingFold(steps, shape, rank, r, &acc)) continue;
      const int v = shape.virtualOf(rank);
      const int rounds = shape.rounds();
      for (int j = 0; j < rounds; ++j) {
        const int partner = shape.rankOf(v ^ (1 << j));
        push(Step{.kind = StepKind::Send, .src = acc, .sendPeer = partner});
        push(Step{.kind = StepKind::RecvReduceCopy, .src = acc, .dst = Buf::Output,
                  .final = j == rounds - 1, .recvPeer = partner});
        acc = Buf::Output;
      }
      detail::closeReducingFold(steps, shape, rank, r);
    }
  });
}

}  // namespace coll::sched
