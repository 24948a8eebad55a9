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

// Appends, for each of the k chunks of `part` (chunks of at most E), a Copy
// Input[chunk] -> Output[dstBase + chunk]: the local copy of the own data
// that all-gathers and broadcasts make after their sends, off the critical
// path (harmless in place, where the two are the same memory).
void appendOwnCopies(std::vector<Step>& steps, Range part, size_t k, size_t E, size_t dstBase);

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
