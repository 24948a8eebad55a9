// tree_all_reduce.cc — TREE_DOC_PLACEHOLDER
#include <vector>

#include "schedule/chunking.h"
#include "schedule/schedules.h"
#include "schedule/tree_shape.h"

namespace coll::sched {

using detail::Range;

namespace detail {
int treeLagFn(int depth);
int (*gTreeLag)(int) = treeLagFn;
int treeLagFn(int depth) { return depth; }
}

Schedule treeAllReduce(int rank, int nranks, size_t count, const Chunking& c) {
  detail::validateCommon(rank, nranks, c);
  Schedule out;
  out.channels.resize(static_cast<size_t>(c.nchannels));
  const size_t E = detail::effectiveChunk(c.chunkElems);

  for (int ch = 0; ch < c.nchannels; ++ch) {
    auto& steps = out.channels[static_cast<size_t>(ch)].steps;
    const Range part = detail::channelPart(count, c, ch);
    const size_t k = detail::chunksFor(part.len, E);
    auto chunk = [&](size_t i) {
      Range r = detail::splitEven(part.len, k, i, E);
      r.off += part.off;
      return r;
    };
    auto push = [&](Step s, const Range& r) { steps.push_back(detail::placed(s, r.off, r.off, r.len)); };

    if (nranks == 1) {
      for (size_t i = 0; i < k; ++i)
        push(Step{.kind = StepKind::Copy, .src = Buf::Input, .dst = Buf::Output, .final = true},
             chunk(i));
      continue;
    }
    const TreeNode t = doubleBinaryTree(rank, nranks, ch % 2);
    const int c0 = t.child[0], c1 = t.child[1], up = t.parent;
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

    const size_t lag = up < 0 ? 0 : static_cast<size_t>(detail::gTreeLag(t.depth));
    for (size_t i = 0; i < k + lag; ++i) {
      if (i < k) reduceUp(chunk(i));
      if (up >= 0 && i >= lag) broadcastDown(chunk(i - lag));
    }
  }
  return out;
}

}  // namespace coll::sched
