// pipeline_reduce.cc — reduce up a chain towards the root, chunked so the
// chain works on k chunks at once (a pipeline).
//
// Chain: the same positions as pipeline_broadcast.cc (root at q = 0, rank
// (root + q) mod N on even channels, (root - q) mod N on odd ones); data
// flows from q = N-1 down to the root.  Channel ch owns a contiguous part of
// the buffer, cut into k chunks of <= E elements.
//
// Steps per chunk:
//   q = N-1           Send            Input (pre) -> q-1
//   q = N-2..1        RecvReduceSend  q+1, Input (pre) -> q-1
//   root (q = 0)      RecvReduceCopy  q1, Input (pre), final -> Output
// Non-root ranks never touch Output.  Each element is reduced once per
// rank, in chain order, and finished (post-op) by the root only.
//
//   q3 --x3--> q2 --x3+x2--> q1 --x3+x2+x1--> root: +x0, final
//
// Bytes sent per rank: S (every rank but the root).
// Cost: T = (N-1 + k-1) * (alpha + S/k * beta)
//         = (N+k-2)*alpha + (N+k-2)/k * S * beta   (k chunks per channel).
// N == 1: one final Copy Input -> Output per chunk.
#include "schedule/chunking.h"
#include "schedule/ring.h"
#include "schedule/schedules.h"

namespace coll::sched {

using detail::Range;

Schedule pipelineReduce(int rank, int nranks, int root, size_t count, const Chunking& c) {
  detail::validateCommon(rank, nranks, c);
  detail::validateRoot(root, nranks, "root");
  return detail::perChannel(count, c, [&](const detail::ChannelCut& cut, std::vector<Step>& steps) {
    const detail::Ring ring = detail::ringForChannel(nranks, cut.ch, c.ringOrder);
    const int q = (ring.pos(rank) - ring.pos(root) + nranks) % nranks;
    // Data flows against the chain orientation: from position q+1 to q-1.
    const int towardsRoot = ring.prev(rank), fromLeaf = ring.next(rank);

    for (size_t i = 0; i < cut.k; ++i) {
      const Range r = cut.chunk(i);
      const size_t o = r.off;
      Step s;
      if (nranks == 1)
        s = Step{.kind = StepKind::Copy, .src = Buf::Input, .dst = Buf::Output, .final = true};
      else if (q == 0)
        s = Step{.kind = StepKind::RecvReduceCopy, .src = Buf::Input, .dst = Buf::Output,
                 .final = true, .recvPeer = fromLeaf};
      else if (q == nranks - 1)
        s = Step{.kind = StepKind::Send, .src = Buf::Input, .sendPeer = towardsRoot};
      else
        s = Step{.kind = StepKind::RecvReduceSend, .src = Buf::Input, .recvPeer = fromLeaf,
                 .sendPeer = towardsRoot};
      steps.push_back(detail::placed(s, o, o, r.len));
    }
  });
}

}  // namespace coll::sched
