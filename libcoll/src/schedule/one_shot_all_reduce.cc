// one_shot_all_reduce.cc — every rank sends its whole input to every other
// rank, then reduces the N contributions itself in the canonical order
// x0, x1, ..., x(N-1).  One hop: for small messages between ranks that are
// all directly connected (one node).
//
// Channel ch owns a contiguous part of the buffer, cut into k chunks of <= E
// elements.  Steps of rank r per chunk:
//   Send Input (pre) -> r+1, r+2, ..., r+N-1 (mod N; staggered so that no
//   peer is everybody's first target)
//   then build acc = ((x0 + x1) + x2) + ... in Output, one term per step:
//     r = 0:  RecvReduceCopy from 1 with Input     (acc = x1 + x0)
//     r = 1:  RecvReduceCopy from 0 with Input     (acc = x0 + x1)
//     r >= 2: Recv from 0, RecvReduceCopy from 1 with Output
//     then for j = 2..N-1: j == r ? LocalReduce Output += Input
//                                 : RecvReduceCopy from j with Output
//   The step adding term N-1 is final.
// The ops are commutative (op(a,b) == op(b,a) bit for bit), so every rank
// evaluates the same expression and all end bit-identical.
//
//   N = 3, rank 2:  Send x2 ->0, ->1;  Recv x0;  acc += x1 (wire);  acc += x2
//                   (LocalReduce, final)
//
// Sends within a chunk never wait on receives of the same chunk, so one
// FIFO slot per link suffices.
// In place (Input == Output) is safe only for N <= 2: ranks r >= 2 must
// hold the partial x0+..+x(r-1) before adding their own x_r, and with no
// scratch buffer that partial overwrites x_r.  algoInPlaceSafe() says so;
// the executor must give such calls a separate Input.
//
// Bytes sent per rank: (N-1) * S; received: (N-1) * S.
// Cost: T = k*alpha + (N-1) * S * beta   (k chunks per channel; the chunks
// are not overlapped: each is one hop).
// N == 1: one final Copy Input -> Output per chunk.
#include "schedule/chunking.h"
#include "schedule/schedules.h"

namespace coll::sched {

using detail::Range;

Schedule oneShotAllReduce(int rank, int nranks, size_t count, const Chunking& c) {
  detail::validateCommon(rank, nranks, c);
  return detail::perChannel(count, c, [&](const detail::ChannelCut& cut, std::vector<Step>& steps) {
    for (size_t i = 0; i < cut.k; ++i) {
      const Range r = cut.chunk(i);
      auto push = [&](Step s) { steps.push_back(detail::placed(s, r.off, r.off, r.len)); };
      if (nranks == 1) {
        push(Step{.kind = StepKind::Copy, .src = Buf::Input, .dst = Buf::Output, .final = true});
        continue;
      }
      for (int j = 1; j < nranks; ++j)
        push(Step{.kind = StepKind::Send, .src = Buf::Input, .sendPeer = (rank + j) % nranks});
      const bool last2 = nranks == 2;  // the first combine is also the last
      if (rank <= 1) {
        push(Step{.kind = StepKind::RecvReduceCopy, .src = Buf::Input, .dst = Buf::Output,
                  .final = last2, .recvPeer = 1 - rank});
      } else {
        push(Step{.kind = StepKind::Recv, .dst = Buf::Output, .recvPeer = 0});
        push(Step{.kind = StepKind::RecvReduceCopy, .src = Buf::Output, .dst = Buf::Output,
                  .recvPeer = 1});
      }
      for (int j = 2; j < nranks; ++j) {
        const bool fin = j == nranks - 1;
        if (j == rank)
          push(Step{.kind = StepKind::LocalReduce, .src = Buf::Input, .dst = Buf::Output,
                    .final = fin});
        else
          push(Step{.kind = StepKind::RecvReduceCopy, .src = Buf::Output, .dst = Buf::Output,
                    .final = fin, .recvPeer = j});
      }
    }
  });
}

}  // namespace coll::sched
