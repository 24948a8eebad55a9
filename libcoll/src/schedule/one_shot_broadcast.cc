// one_shot_broadcast.cc — the root sends the whole buffer straight to every
// other rank (a flat tree): one hop instead of the chain's N-1, for calls
// small enough that the root's port is not the limit.
//
// Channel ch owns a contiguous part of the buffer, cut into k chunks of
// <= E elements.  Steps per chunk:
//   root      Send Input -> root+s, root+2s, ..., root+(N-1)s   (mod N; s =
//             +1 on even channels, -1 on odd ones, as the ring turns);
//             after all sends, Copy each chunk Input -> Output (harmless in
//             place, where Input == Output)
//   others    Recv from root -> Output
// The root's sends of chunk i+1 wait only for a receiver to take chunk i,
// so one FIFO slot per link suffices.
//
// Bytes sent by the root: (N-1) * S; received per rank: S.
// Cost: T = k*alpha + (N-1) * S * beta  (k chunks per channel), the
// one-shot all-reduce's price: the root's port carries every copy.
// N == 1: Copy Input -> Output only.
#include "schedule/chunking.h"
#include "schedule/schedules.h"

namespace coll::sched {

using detail::Range;

Schedule oneShotBroadcast(int rank, int nranks, int root, size_t count, const Chunking& c) {
  detail::validateCommon(rank, nranks, c);
  detail::validateRoot(root, nranks, "root");
  return detail::perChannel(count, c, [&](const detail::ChannelCut& cut, std::vector<Step>& steps) {
    const int s = cut.ch % 2 == 0 ? 1 : nranks - 1;  // +1 or -1, mod N

    for (size_t i = 0; i < cut.k; ++i) {
      const Range r = cut.chunk(i);
      const size_t o = r.off;
      if (rank != root) {
        steps.push_back(detail::placed(Step{.kind = StepKind::Recv, .dst = Buf::Output, .recvPeer = root}, 0, o,
                                       r.len));
        continue;
      }
      for (int j = 1; j < nranks; ++j) {
        const int to = static_cast<int>((root + static_cast<long>(j) * s) % nranks);
        steps.push_back(
            detail::placed(Step{.kind = StepKind::Send, .src = Buf::Input, .sendPeer = to}, o, 0, r.len));
      }
    }
    if (rank == root) detail::appendOwnCopies(steps, cut, 0);
  });
}

}  // namespace coll::sched
