// staged_piece_bytes.cc — the staged path's piece size as the library reads
// it (COLL_STAGED_PIECE_BYTES, the same parser), for the GPU test's
// piecewise reference.  A .cc file: the parser's headers stay out of nvcc.
#include "staged_piece_bytes.h"

#include "schedule/staged_pieces.h"
#include "coll/base/env.h"

namespace devtest {

size_t stagedPieceBytes() {
  const auto text = coll::env::get("COLL_STAGED_PIECE_BYTES");
  if (!text) return coll::sched::kDefaultStagedPieceBytes;
  auto v = coll::env::parseSize("COLL_STAGED_PIECE_BYTES", *text);
  return v.isOk() ? v.value() : 0;  // the library refuses such a value at init, before any call
}

}  // namespace devtest
