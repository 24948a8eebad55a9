// tree_all_reduce.cc — all-reduce over a double binary tree: reduce up to
// the root, broadcast back down, pipelined per chunk.
//
// Trees (tree_shape.h): two complementary binary trees of depth
// D = floor(log2 N); a rank is interior (has children) in at most one of
// them.  They are built over positions in the ring order where one is given
// (Chunking::ringOrder: each host's ranks together), so a subtree holds
// ranks next to each other in it: with ranks dealt to two hosts in turn,
// rank order puts every leaf on another host than its parent, the ring
// order at most one edge per level and tree between the hosts.  Channel
// ch uses tree ch % 2, so with an even channel count each tree carries
// half the data (with one channel, tree 0 carries all of it).
// Channel ch owns a contiguous part of the buffer, cut into k chunks of <= E
// elements.
//
// Steps per chunk, reduce (up):
//   leaf                 Send           Input (pre) -> parent
//   one child            RecvReduceSend child, Input (pre) -> parent
//   two children         RecvReduceCopy child0, Input (pre) -> Output (partial)
//                        RecvReduceSend child1, Output -> parent
//   root, one child      RecvReduceCopySend child, Input (pre), final
//                        -> Output, back to the child
//   root, two children   RecvReduceCopy child0, Input (pre) -> Output
//                        RecvReduceCopySend child1, Output, final -> Output, child1
//                        Send Output -> child0
// broadcast (down), non-root:
//   leaf                 Recv           parent -> Output
//   one child            RecvCopySend   parent -> Output, child
//   two children         RecvCopySend   parent -> Output, child0
//                        Send Output -> child1
// Each element is reduced once per rank on its way up and finished (final,
// post-op) only by the root; ranks below overwrite their partial sums with
// the finished value, so every rank ends bit-identical.
//
// Order: a rank at depth d (root 0) interleaves the two streams with a lag
// of d chunks: up(0..d-1), then up(i), down(i-d) for i = d..k-1, then the
// last downs.  Why d: a chunk reduced at depth d comes back after about 2d
// hops, so the rank keeps working on new chunks meanwhile; and the lag may
// grow by at most one chunk per level for the schedule to complete with
// one-slot FIFOs (per level a child can run ahead of its parent by one slot
// on the up link and one on the down link, minus the step in progress).
// Lag 2d deadlocks with one slot; in the simulator's step model d and 2d
// take the same number of rounds (about 4k: the 4 steps per chunk of the
// two-child ranks are the bottleneck either way).
//
//   N = 6, tree 0 (tree 1 shifts labels by one, tree_shape.h):
//            3          up:   0,2 -> 1;  4 -> 5;  1,5 -> 3 (final)
//          /   \        down: 3 -> 1,5;  1 -> 0,2;  5 -> 4
//         1     5
//        / \   /
//       0   2 4
//
// Bytes per rank (each tree carrying S/2): interior in one tree: receives
// 2*S/2 from its children + S/2 from its parent, sends S/2 up + 2*S/2 down;
// leaf in the other: sends S/2, receives S/2: 2S each way (ring: 2(N-1)/N S).
// Cost: T = (2D + k - 1)*alpha + (2D*f/k + (3f + g)*(k-1)/k) * S * beta
// with f, g the shares of the data on the busier / other tree (1/2, 1/2
// with an even channel count): the first chunk crosses 2D hops, the rest
// stream at the rate of the busiest rank port (3f + g of S).
// N == 1: one final Copy Input -> Output per chunk.
#include "schedule/chunking.h"
#include "schedule/ring.h"
#include "schedule/schedules.h"
#include "schedule/tree_shape.h"

namespace coll::sched {

using detail::Range;

Schedule treeAllReduce(int rank, int nranks, size_t count, const Chunking& c) {
  detail::validateCommon(rank, nranks, c);
  return detail::perChannel(count, c, [&](const detail::ChannelCut& cut, std::vector<Step>& steps) {
    const size_t k = cut.k;
    auto push = [&](Step s, const Range& r) { steps.push_back(detail::placed(s, r.off, r.off, r.len)); };

    if (nranks == 1) {
      for (size_t i = 0; i < k; ++i)
        push(Step{.kind = StepKind::Copy, .src = Buf::Input, .dst = Buf::Output, .final = true},
             cut.chunk(i));
      return;
    }
    // The trees over positions in the ring order (rank order without one).
    const detail::Ring order = detail::ringForChannel(nranks, 0, c.ringOrder);
    const TreeNode t = doubleBinaryTree(order.pos(rank), nranks, cut.ch % 2);
    auto rankOf = [&](int p) { return p < 0 ? -1 : order.rankAt(p); };
    const int c0 = rankOf(t.child[0]), c1 = rankOf(t.child[1]), up = rankOf(t.parent);
    const int nchild = (c0 >= 0) + (c1 >= 0);
    const int only = c0 >= 0 ? c0 : c1;  // the child when there is one

    // Reduce chunk i up the tree (the root also starts it down).
    auto reduceUp = [&](const Range& r) {
      if (up < 0) {  // root
        if (nchild == 1) {
          push(Step{.kind = StepKind::RecvReduceCopySend, .src = Buf::Input, .dst = Buf::Output,
                    .final = true, .recvPeer = only, .sendPeer = only},
               r);
        } else {
          push(Step{.kind = StepKind::RecvReduceCopy, .src = Buf::Input, .dst = Buf::Output,
                    .recvPeer = c0},
               r);
          push(Step{.kind = StepKind::RecvReduceCopySend, .src = Buf::Output, .dst = Buf::Output,
                    .final = true, .recvPeer = c1, .sendPeer = c1},
               r);
          push(Step{.kind = StepKind::Send, .src = Buf::Output, .sendPeer = c0}, r);
        }
      } else if (nchild == 0) {
        push(Step{.kind = StepKind::Send, .src = Buf::Input, .sendPeer = up}, r);
      } else if (nchild == 1) {
        push(Step{.kind = StepKind::RecvReduceSend, .src = Buf::Input, .recvPeer = only,
                  .sendPeer = up},
             r);
      } else {
        push(Step{.kind = StepKind::RecvReduceCopy, .src = Buf::Input, .dst = Buf::Output,
                  .recvPeer = c0},
             r);
        push(Step{.kind = StepKind::RecvReduceSend, .src = Buf::Output, .recvPeer = c1,
                  .sendPeer = up},
             r);
      }
    };
    // Broadcast chunk i down (non-root only).
    auto broadcastDown = [&](const Range& r) {
      if (nchild == 0) {
        push(Step{.kind = StepKind::Recv, .dst = Buf::Output, .recvPeer = up}, r);
      } else if (nchild == 1) {
        push(Step{.kind = StepKind::RecvCopySend, .dst = Buf::Output, .recvPeer = up,
                  .sendPeer = only},
             r);
      } else {
        push(Step{.kind = StepKind::RecvCopySend, .dst = Buf::Output, .recvPeer = up,
                  .sendPeer = c0},
             r);
        push(Step{.kind = StepKind::Send, .src = Buf::Output, .sendPeer = c1}, r);
      }
    };

    const size_t lag = static_cast<size_t>(t.depth);  // 0 for the root: its up step sends down
    for (size_t i = 0; i < k + lag; ++i) {
      if (i < k) reduceUp(cut.chunk(i));
      if (up >= 0 && i >= lag) broadcastDown(cut.chunk(i - lag));
    }
  });
}

}  // namespace coll::sched
