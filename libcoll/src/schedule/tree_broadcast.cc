// tree_broadcast.cc — broadcast down a binomial tree: the last rank is
// ceil(log2 N) hops from the root where the chain needs N-1, for calls
// whose latency, not bytes, sets the time.
//
// Virtual rank v = (rank - root) mod N on even channels and (root - rank)
// mod N on odd ones (the ring's two orientations, so channels spread the
// sends over different links), over positions in the ring order where one
// is given (ring.h: each host's ranks together, so each subtree below the
// top few levels stays inside a host); tree_shape.h gives v's parent and
// children, largest subtree first.  Channel ch owns a contiguous part of the buffer,
// cut into k chunks of <= E elements.  Steps per chunk:
//   root      Send Input -> each child; after all chunks, Copy each chunk
//             Input -> Output (harmless in place, where Input == Output)
//   leaves    Recv from the parent -> Output
//   others    RecvCopySend parent -> Output, first child (it forwards in the
//             step that receives, as the chain does), then Send Output ->
//             each further child
//
//   N = 8, v:   0 --1st--> 4 --1st--> 6 ---> 7
//               |          `--2nd--> 5
//               |--2nd--> 2 ---> 3
//               `--3rd--> 1
//
// A chunk is written to Output once and only read after that, so the sends
// from Output see final data, and a large one may leave straight from it
// (the executor's external sends).  The tree has no cycle, so one FIFO slot
// per link suffices: every receiver drains its link without waiting on it.
//
// Bytes sent by the root: L * S (L = ceil(log2 N) children); received per
// rank: S.  Cost, each step alpha + S/k beta: the root sends its L copies
// of each of k chunks one after another, and every subtree keeps up (the
// child reached first has the most sends left but the longest lead), so
// T = L k alpha + L S beta.  For one chunk: L hops against the chain's N-1;
// for large S: L times the chain's bytes, so the tuner keeps the chain.
// N == 1: Copy Input -> Output only.
#include "schedule/chunking.h"
#include "schedule/ring.h"
#include "schedule/schedules.h"
#include "schedule/tree_shape.h"

namespace coll::sched {

using detail::Range;

Schedule treeBroadcast(int rank, int nranks, int root, size_t count, const Chunking& c) {
  detail::validateCommon(rank, nranks, c);
  detail::validateRoot(root, nranks, "root");
  return detail::perChannel(count, c, [&](const detail::ChannelCut& cut, std::vector<Step>& steps) {
    // v: the distance from the root along the channel's ring.
    const detail::Ring ring = detail::ringForChannel(nranks, cut.ch, c.ringOrder);
    const int rootPos = ring.pos(root);
    const int v = (ring.pos(rank) - rootPos + nranks) % nranks;
    auto rankOf = [&](int u) { return ring.rankAt(static_cast<long>(rootPos) + u); };
    const BinomialNode node = binomialTree(v, nranks);
    const Buf from = v == 0 ? Buf::Input : Buf::Output;

    for (size_t i = 0; i < cut.k; ++i) {
      const Range r = cut.chunk(i);
      const size_t o = r.off;
      size_t c0 = 0;  // children already sent to
      if (v != 0 && node.children.empty()) {
        steps.push_back(detail::placed(
            Step{.kind = StepKind::Recv, .dst = Buf::Output, .recvPeer = rankOf(node.parent)}, 0, o, r.len));
      } else if (v != 0) {
        steps.push_back(detail::placed(Step{.kind = StepKind::RecvCopySend, .dst = Buf::Output,
                                            .recvPeer = rankOf(node.parent), .sendPeer = rankOf(node.children[0])},
                                       0, o, r.len));
        c0 = 1;
      }
      for (size_t j = c0; j < node.children.size(); ++j)
        steps.push_back(detail::placed(
            Step{.kind = StepKind::Send, .src = from, .sendPeer = rankOf(node.children[j])}, o, 0, r.len));
    }
    if (v == 0) detail::appendOwnCopies(steps, cut, 0);
  });
}

}  // namespace coll::sched
