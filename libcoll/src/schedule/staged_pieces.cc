// staged_pieces.cc — see staged_pieces.h.
#include "schedule/staged_pieces.h"

#include <algorithm>

namespace coll::sched {

size_t stagedPieceElems(CollKind kind, size_t elemSize, int nranks, size_t pieceBytes) {
  const size_t blocks = (kind == CollKind::AllGather || kind == CollKind::ReduceScatter) ? size_t(nranks) : 1;
  size_t elems = pieceBytes / std::max<size_t>(elemSize, 1) / std::max<size_t>(blocks, 1);
  if (elems >= 64) elems -= elems % 64;
  return std::max<size_t>(elems, 1);
}

size_t stagedPieceCount(size_t count, size_t pieceElems) {
  if (count == 0) return 1;
  return count / pieceElems + (count % pieceElems != 0 ? 1 : 0);
}

StagedPiece stagedPiece(size_t count, size_t pieceElems, size_t index) {
  StagedPiece p;
  p.offset = std::min(count, index * pieceElems);
  p.count = std::min(pieceElems, count - p.offset);
  return p;
}

int stagedBlocks(size_t pieceBytes, size_t blockBytes, int maxBlocks) {
  const size_t per = std::max<size_t>(blockBytes, 1);
  const size_t want = pieceBytes / per + (pieceBytes % per != 0 ? 1 : 0);
  return static_cast<int>(std::clamp<size_t>(want, 1, static_cast<size_t>(std::max(maxBlocks, 1))));
}

}  // namespace coll::sched
