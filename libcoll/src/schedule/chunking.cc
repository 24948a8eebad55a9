// chunking.cc — see chunking.h.
#include "schedule/chunking.h"

#include <stdexcept>
#include <vector>
#include <string>

namespace coll::sched::detail {

Range splitEven(size_t total, size_t parts, size_t i, size_t maxPart) {
  if (parts == 0 || i >= parts) return {};
  const bool aligned = total / parts >= kAlignElems &&
                       (maxPart == kNoLimit || maxPart % kAlignElems == 0);
  if (aligned) {
    // Whole 16-element units spread evenly, the first `extra` parts one
    // unit bigger; the sub-unit remainder goes to the last part.  With
    // total <= parts*maxPart no part exceeds maxPart (see chunking.h).
    const size_t units = total / kAlignElems, rem = total % kAlignElems;
    const size_t q = units / parts, extra = units % parts;
    const size_t before = i * q + (i < extra ? i : extra);
    Range r{before * kAlignElems, (q + (i < extra ? 1 : 0)) * kAlignElems};
    if (i == parts - 1) r.len += rem;
    return r;
  }
  const size_t q = total / parts, extra = total % parts;
  return {i * q + (i < extra ? i : extra), q + (i < extra ? 1 : 0)};
}

size_t effectiveChunk(size_t chunkElems) {
  if (chunkElems >= kAlignElems) return chunkElems - chunkElems % kAlignElems;
  return chunkElems == 0 ? 1 : chunkElems;
}

Range channelPart(size_t count, const Chunking& c, int ch) {
  return splitEven(count, static_cast<size_t>(c.nchannels), static_cast<size_t>(ch));
}

void appendOwnCopies(std::vector<Step>& steps, const ChannelCut& cut, size_t dstBase) {
  for (size_t i = 0; i < cut.k; ++i) {
    const Range r = cut.chunk(i);
    steps.push_back(
        placed(Step{.kind = StepKind::Copy, .src = Buf::Input, .dst = Buf::Output}, r.off, dstBase + r.off, r.len));
  }
}

void validateCommon(int rank, int nranks, const Chunking& c) {
  if (nranks < 1) throw std::invalid_argument("nranks must be >= 1, got " + std::to_string(nranks));
  if (rank < 0 || rank >= nranks)
    throw std::invalid_argument("rank " + std::to_string(rank) + " outside [0, " +
                                std::to_string(nranks) + ")");
  if (c.nchannels < 1)
    throw std::invalid_argument("nchannels must be >= 1, got " + std::to_string(c.nchannels));
  if (c.chunkElems == 0) throw std::invalid_argument("chunkElems must be >= 1");
  if (c.ringOrder != nullptr) {
    std::vector<bool> seen(static_cast<size_t>(nranks), false);
    for (int i = 0; i < nranks; ++i) {
      const int r = c.ringOrder[i];
      if (r < 0 || r >= nranks || seen[static_cast<size_t>(r)])
        throw std::invalid_argument("ringOrder is not a permutation of 0.." + std::to_string(nranks - 1) +
                                    " (entry " + std::to_string(i) + " = " + std::to_string(r) + ")");
      seen[static_cast<size_t>(r)] = true;
    }
  }
}

void validateRoot(int root, int nranks, const char* what) {
  if (root < 0 || root >= nranks)
    throw std::invalid_argument(std::string(what) + " " + std::to_string(root) + " outside [0, " +
                                std::to_string(nranks) + ")");
}

}  // namespace coll::sched::detail
