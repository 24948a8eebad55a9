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
  Schedule out;
  out.channels.resize(static_cast<size_t>(c.nchannels));
  const size_t E = detail::effectiveChunk(c.chunkElems);
  for (int ch = 0; ch < c.nchannels; ++ch) {
    const Range part = detail::channelPart(count, c, ch);
    const size_t k = detail::chunksFor(part.len, E);
    for (size_t i = 0; i < k; ++i) {
      const Range r = detail::splitEven(part.len, k, i, E);
      out.channels[static_cast<size_t>(ch)].steps.push_back(detail::placed(
          Step{.kind = StepKind::Send, .src = Buf::Input, .sendPeer = peer}, part.off + r.off, 0,
          r.len));
    }
  }
  return out;
}

}  // namespace coll::sched
