// direct_send.cc — point-to-point send: the sending half (directRecv is the
// other, in direct_recv.cc).
//
// Channel ch owns a contiguous part of the buffer, cut into k chunks of
// <= E elements; per chunk one Send Input -> peer.  directRecv cuts the same
// way, so the i-th send meets the i-th receive with the same count.  A peer
// equal to rank gives a self link (the executor may turn it into a copy).
//
// Bytes sent: S.   Cost: T = k*alpha + S*beta   (k chunks per channel; the
// chunks stream through the link's FIFO).
#include <stdexcept>

#include "schedule/chunking.h"
#include "schedule/schedules.h"

namespace coll::sched {

using detail::Range;

Schedule directSend(int rank, int peer, size_t count, const Chunking& c) {
  detail::validateCommon(0, 1, c);
  if (rank < 0 || peer < 0) throw std::invalid_argument("directSend: negative rank or peer");
  return detail::perChannel(count, c, [&](const detail::ChannelCut& cut, std::vector<Step>& steps) {
    for (size_t i = 0; i < cut.k; ++i) {
      const Range r = cut.chunk(i);
      steps.push_back(
          detail::placed(Step{.kind = StepKind::Send, .src = Buf::Input, .sendPeer = peer}, r.off, 0, r.len));
    }
  });
}

}  // namespace coll::sched
