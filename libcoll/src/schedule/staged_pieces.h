// staged_pieces.h — how the host-staged device path
// (device/entry/device_staged.h) cuts a call into pieces, as a pure function.
//
// A piece is the same collective on a sub-range [offset, offset + count) of
// every rank's block: for all-reduce, broadcast, reduce and send/recv the
// buffer; for all-gather each rank's contribution (the output piece is N
// segments, one per rank's block); for reduce-scatter each rank's result
// block (the input piece is N segments).  Every rank cuts a call alike from
// (collective, count, element size, ranks, piece bytes), so piece k of a
// call meets piece k on every peer.  The bytes one piece holds on a rank,
// input or output side, are at most pieceBytes (or one element per block):
// what bounds the pinned staging a call needs, whatever its size.
//
// A call of count 0 is one empty piece: it still runs once on the host, so
// the host executor's argument checks (COLL_CHECK) see it.
//
// The reductions of a piece follow the host algorithm chosen for the piece's
// count, so a call's result is bit-identical to the same pieces run as host
// calls (what tests/gpu compares), not necessarily to one host call of the
// whole count.
#pragma once

#include <cstddef>

#include "schedule/schedules.h"

namespace coll::sched {

// COLL_STAGED_PIECE_BYTES's default: large enough that a piece's fixed costs
// (a host function, a wait kernel, a host collective's start) stay small
// beside its copies and transfer, small enough that a call's pinned staging
// (3 slots of a piece in and out) stays a few tens of MiB.
constexpr size_t kDefaultStagedPieceBytes = size_t{4} << 20;

// COLL_STAGED_BLOCK_BYTES's default: each block of the staged kernel
// (device/staged_kernel.h) copies about this much of a piece per side, so
// a 4 MiB piece gets the most blocks and a small call one.
constexpr size_t kDefaultStagedBlockBytes = size_t{256} << 10;

struct StagedPiece {
  size_t offset = 0;  // elements into every rank's block
  size_t count = 0;
};

// Elements per piece (per rank's block): pieceBytes over the larger side's
// blocks (N for all-gather's output and reduce-scatter's input, else 1),
// rounded down to a multiple of 64 elements when that many fit (aligned
// copies), and at least 1.
size_t stagedPieceElems(CollKind kind, size_t elemSize, int nranks, size_t pieceBytes);

// How many pieces a call of `count` elements takes: at least 1.
size_t stagedPieceCount(size_t count, size_t pieceElems);

// Piece `index` (< stagedPieceCount) of a call of `count` elements.
StagedPiece stagedPiece(size_t count, size_t pieceElems, size_t index);

// The staged kernel's blocks for pieces of at most pieceBytes a side (the
// largest side of any op of the call): one per blockBytes, between 1 and
// maxBlocks.
int stagedBlocks(size_t pieceBytes, size_t blockBytes, int maxBlocks);

}  // namespace coll::sched
