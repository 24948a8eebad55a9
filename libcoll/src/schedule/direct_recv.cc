// direct_recv.cc — point-to-point receive: the receiving half of
// directSend (direct_send.cc), cut identically: per chunk one
// Recv peer -> Output.
//
// Bytes received: S.   Cost: T = k*alpha + S*beta   (k chunks per channel).
#include <stdexcept>

#include "schedule/chunking.h"
#include "schedule/schedules.h"

namespace coll::sched {

using detail::Range;

Schedule directRecv(int rank, int peer, size_t count, const Chunking& c) {
  detail::validateCommon(0, 1, c);
  if (rank < 0 || peer < 0) throw std::invalid_argument("directRecv: negative rank or peer");
  Schedule out;
  out.channels.resize(static_cast<size_t>(c.nchannels));
  const size_t E = detail::effectiveChunk(c.chunkElems);
  for (int ch = 0; ch < c.nchannels; ++ch) {
    const Range part = detail::channelPart(count, c, ch);
    const size_t k = detail::chunksFor(part.len, E);
    for (size_t i = 0; i < k; ++i) {
      const Range r = detail::splitEven(part.len, k, i, E);
      out.channels[static_cast<size_t>(ch)].steps.push_back(detail::placed(
          Step{.kind = StepKind::Recv, .dst = Buf::Output, .recvPeer = peer}, 0, part.off + r.off,
          r.len));
    }
  }
  return out;
}

}  // namespace coll::sched
