// chunking.h — how every schedule cuts a count into channel parts, loops and
// chunks.  Internal to the schedule library (and its tests); pure arithmetic.
//
// One rule everywhere: splitEven(total, parts, i, maxPart) gives part i of
// `parts` near-equal parts of [0, total).  When every part can hold at least
// kAlignElems elements (and maxPart is a multiple of it), parts are
// multiples of kAlignElems except the last, which also takes the remainder;
// otherwise parts differ by at most one element.  Parts may be empty; both
// ends of a link compute the same parts, so empty chunks are skipped
// consistently.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "schedule/step.h"

namespace coll::sched::detail {

// Chunk boundaries prefer multiples of 16 elements (64 bytes of float).
constexpr size_t kAlignElems = 16;
constexpr size_t kNoLimit = SIZE_MAX;

struct Range {
  size_t off = 0;
  size_t len = 0;
};

inline size_t ceilDiv(size_t a, size_t b) { return a / b + (a % b != 0); }

// a*b, saturating at SIZE_MAX.
inline size_t satMul(size_t a, size_t b) {
  if (a != 0 && b > SIZE_MAX / a) return SIZE_MAX;
  return a * b;
}

// Requires total <= parts * maxPart (saturating); returns part i (0-based).
Range splitEven(size_t total, size_t parts, size_t i, size_t maxPart = kNoLimit);

// The largest chunk a step may carry: chunkElems rounded down to a multiple
// of kAlignElems when it is at least that big (so aligned splits never
// exceed chunkElems), else chunkElems itself.  Never 0 (validated earlier).
size_t effectiveChunk(size_t chunkElems);

// Channel ch's contiguous part of [0, count).
Range channelPart(size_t count, const Chunking& c, int ch);

// Number of chunks of at most `maxChunk` elements for `total` elements
// (0 when total == 0).
inline size_t chunksFor(size_t total, size_t maxChunk) {
  return total == 0 ? 0 : ceilDiv(total, maxChunk);
}

// One channel's share of a call: its part of the buffer (of every block,
// for all-gather and reduce-scatter) cut into k chunks of at most E elements.
struct ChannelCut {
  int ch = 0;
  Range part;
  size_t E = 1;
  size_t k = 0;
  // Chunk i (0 <= i < k), its offset counted from the start of the buffer
  // (or block), not of the part.
  Range chunk(size_t i) const {
    Range r = splitEven(part.len, k, i, E);
    r.off += part.off;
    return r;
  }
};

// The frame every schedule shares: a Schedule of c.nchannels channels, and
// body(cut, steps) called once per channel to append that channel's steps.
// Callers validate their arguments first (validateCommon, validateRoot).
template <class Body>
Schedule perChannel(size_t count, const Chunking& c, Body&& body) {
  Schedule out;
  out.channels.resize(static_cast<size_t>(c.nchannels));
  const size_t E = effectiveChunk(c.chunkElems);
  for (int ch = 0; ch < c.nchannels; ++ch) {
    ChannelCut cut{ch, channelPart(count, c, ch), E, 0};
    cut.k = chunksFor(cut.part.len, E);
    body(static_cast<const ChannelCut&>(cut), out.channels[static_cast<size_t>(ch)].steps);
  }
  return out;
}

// Appends, for each chunk of the cut, a Copy Input[chunk] ->
// Output[dstBase + chunk]: the local copy of the own data that all-gathers
// and broadcasts make after their sends, off the critical path (harmless in
// place, where the two are the same memory).
void appendOwnCopies(std::vector<Step>& steps, const ChannelCut& cut, size_t dstBase);

// Fills the step's offsets and count; an offset the step kind does not use
// (stepReadsSrc / stepWritesDst) stays 0 so dumped schedules read clearly.
inline Step placed(Step s, size_t srcOff, size_t dstOff, size_t n) {
  s.srcOff = stepReadsSrc(s.kind) ? srcOff : 0;
  s.dstOff = stepWritesDst(s.kind) ? dstOff : 0;
  s.count = n;
  return s;
}

// Throws std::invalid_argument on nranks < 1, rank outside [0, nranks),
// nchannels < 1 or chunkElems == 0.
void validateCommon(int rank, int nranks, const Chunking& c);
// Throws std::invalid_argument unless 0 <= root < nranks (`what` names it).
void validateRoot(int root, int nranks, const char* what);

}  // namespace coll::sched::detail
