// staged_piece_bytes.h — see staged_piece_bytes.cc.
#pragma once

#include <cstddef>

namespace devtest {

// COLL_STAGED_PIECE_BYTES as libcoll reads it, or its default.
size_t stagedPieceBytes();

}  // namespace devtest
