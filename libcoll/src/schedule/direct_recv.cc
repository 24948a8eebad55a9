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
  return detail::perChannel(count, c, [&](const detail::ChannelCut& cut, std::vector<Step>& steps) {
    for (size_t i = 0; i < cut.k; ++i) {
      const Range r = cut.chunk(i);
      steps.push_back(
          detail::placed(Step{.kind = StepKind::Recv, .dst = Buf::Output, .recvPeer = peer}, 0, r.off, r.len));
    }
  });
}

}  // namespace coll::sched
