// ring_all_reduce.cc — ring all-reduce: a reduce-scatter then an all-gather
// around the ring, chunked and pipelined.
//
// Cutting: channel ch owns a contiguous part of the buffer (splitEven over
// nchannels).  Its part is processed in L = ceil(M / (N*E)) loops of equal
// size (E = chunkElems rounded down to a multiple of 16 when >= 16); a loop
// is cut into N chunks of <= E elements, chunk j = 0..N-1.  Empty chunks
// (count < N) are skipped on both ends of every link.
//
// Steps of the rank at ring position p, per loop (2(N-1) messages):
//   s = 0          Send                chunk p        Input
//   s = 1..N-2     RecvReduceSend      chunk p-s      Input (pre)
//   s = N-1        RecvReduceCopySend  chunk p+1      final -> Output
//   s = N..2N-3    RecvCopySend        chunk p+N-s    -> Output
//   s = 2N-2       Recv                chunk p+2      -> Output
// (chunk indices mod N).  Each element is reduced once, on the rank that
// owns its chunk, in ring order starting at the rank after it; the finished
// value is then forwarded, so all ranks end bit-identical.
//
//   N = 4, loop of chunks A B C D (rank p starts by sending chunk p):
//     reduce-scatter          all-gather
//     0 -A-> 1 -A-> 2 -A-> 3  (3 owns A: final)  3 -A-> 0 -A-> 1 -A-> 2
//     1 -B-> 2 -B-> 3 -B-> 0  (0 owns B)         0 -B-> 1 -B-> 2 -B-> 3
//     ...
// Even channels use the ring r -> r+1, odd channels r -> r-1 (ring.h).
//
// Bytes sent per rank: 2(N-1)/N * S  (S = count * elemBytes).
// Cost: T = 2(N-1)*L*alpha + 2(N-1)/N * S * beta   (L = loops per channel;
// L = 1 when chunkElems >= count/(N*nchannels), the usual case).
// N == 1: one final Copy Input -> Output per chunk (pre and post applied).
#include "schedule/chunking.h"
#include "schedule/ring.h"
#include "schedule/schedules.h"

namespace coll::sched {

using detail::Range;

Schedule ringAllReduce(int rank, int nranks, size_t count, const Chunking& c) {
  detail::validateCommon(rank, nranks, c);
  const size_t N = static_cast<size_t>(nranks);

  return detail::perChannel(count, c, [&](const detail::ChannelCut& cut, std::vector<Step>& steps) {
    const Range part = cut.part;
    const size_t E = cut.E;
    if (part.len == 0) return;

    if (nranks == 1) {
      for (size_t i = 0; i < cut.k; ++i) {
        const Range r = cut.chunk(i);
        steps.push_back(Step{.kind = StepKind::Copy, .src = Buf::Input, .dst = Buf::Output,
                             .final = true, .srcOff = r.off, .dstOff = r.off, .count = r.len});
      }
      return;
    }

    const detail::Ring ring = detail::ringForChannel(nranks, cut.ch, c.ringOrder);
    const int p = ring.pos(rank);
    const int next = ring.next(rank), prev = ring.prev(rank);
    const size_t loopMax = detail::satMul(N, E);
    const size_t nloops = detail::chunksFor(part.len, loopMax);

    for (size_t l = 0; l < nloops; ++l) {
      const Range loop = detail::splitEven(part.len, nloops, l, loopMax);
      // Offset and length of chunk j (any integer, taken mod N) of this loop.
      auto chunk = [&](long j) {
        const size_t idx = static_cast<size_t>(((j % nranks) + nranks) % nranks);
        Range r = detail::splitEven(loop.len, N, idx, E);
        r.off += part.off + loop.off;
        return r;
      };
      auto emit = [&](Step s, const Range& r) {
        if (r.len == 0) return;  // empty chunk: skipped by both ends
        steps.push_back(detail::placed(s, r.off, r.off, r.len));
      };
      // Reduce-scatter.
      emit(Step{.kind = StepKind::Send, .src = Buf::Input, .sendPeer = next}, chunk(p));
      for (int s = 1; s <= nranks - 2; ++s)
        emit(Step{.kind = StepKind::RecvReduceSend, .src = Buf::Input, .recvPeer = prev,
                  .sendPeer = next},
             chunk(p - s));
      emit(Step{.kind = StepKind::RecvReduceCopySend, .src = Buf::Input, .dst = Buf::Output,
                .final = true, .recvPeer = prev, .sendPeer = next},
           chunk(p + 1));
      // All-gather of the finished chunks.
      for (int t = 1; t <= nranks - 2; ++t)
        emit(Step{.kind = StepKind::RecvCopySend, .dst = Buf::Output, .recvPeer = prev,
                  .sendPeer = next},
             chunk(p + 1 - t));
      emit(Step{.kind = StepKind::Recv, .dst = Buf::Output, .recvPeer = prev}, chunk(p + 2));
    }
  });
}

}  // namespace coll::sched
