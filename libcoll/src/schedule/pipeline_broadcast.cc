// pipeline_broadcast.cc — broadcast down a chain from the root, chunked so
// the chain works on k chunks at once (a pipeline).
//
// Chain: position q = 0..N-1 holds rank (root + q) mod N on even channels
// and (root - q) mod N on odd channels (ring.h orientation), so the root is
// position 0 and the chain ends at position N-1.  Channel ch owns a
// contiguous part of the buffer, cut into k chunks of <= E elements.
//
// Steps per chunk:
//   root (q = 0)      Send Input -> q1; after all sends, the root copies
//                     each chunk Input -> Output (off the chain's critical
//                     path; harmless in place, where Input == Output)
//   q = 1..N-2        RecvCopySend  q-1 -> Output, q+1
//   q = N-1           Recv          q-1 -> Output
//
//   root --c0--> q1 --c0--> q2 --c0--> q3
//        --c1-->    --c1-->    --c1-->       chunk c1 one hop behind c0
//
// Bytes sent per rank: S (every rank but the last); received: S.
// Cost: T = (N-1 + k-1) * (alpha + S/k * beta)
//         = (N+k-2)*alpha + (N+k-2)/k * S * beta   (k chunks per channel):
// the first chunk needs N-1 hops, each later one adds one hop.
// N == 1: Copy Input -> Output only.
#include "schedule/chunking.h"
#include "schedule/ring.h"
#include "schedule/schedules.h"

namespace coll::sched {

using detail::Range;

Schedule pipelineBroadcast(int rank, int nranks, int root, size_t count, const Chunking& c) {
  detail::validateCommon(rank, nranks, c);
  detail::validateRoot(root, nranks, "root");
  return detail::perChannel(count, c, [&](const detail::ChannelCut& cut, std::vector<Step>& steps) {
    // Chain positions: the ring oriented so that the root sits at position 0.
    const detail::Ring ring = detail::ringForChannel(nranks, cut.ch, c.ringOrder);
    const int q = (ring.pos(rank) - ring.pos(root) + nranks) % nranks;
    const int next = ring.next(rank), prev = ring.prev(rank);

    for (size_t i = 0; i < cut.k; ++i) {
      const Range r = cut.chunk(i);
      const size_t o = r.off;
      if (q == 0) {
        if (nranks > 1)
          steps.push_back(detail::placed(
              Step{.kind = StepKind::Send, .src = Buf::Input, .sendPeer = next}, o, 0, r.len));
      } else if (q < nranks - 1) {
        steps.push_back(detail::placed(Step{.kind = StepKind::RecvCopySend, .dst = Buf::Output,
                                            .recvPeer = prev, .sendPeer = next},
                                       0, o, r.len));
      } else {
        steps.push_back(detail::placed(
            Step{.kind = StepKind::Recv, .dst = Buf::Output, .recvPeer = prev}, 0, o, r.len));
      }
    }
    if (q == 0) detail::appendOwnCopies(steps, cut, 0);
  });
}

}  // namespace coll::sched
