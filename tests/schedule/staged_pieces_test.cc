// The host-staged path's pieces (schedule/staged_pieces.h): every element
// of every rank's block in exactly one piece, in order; no side of a piece
// above the piece bytes; the same cut on every rank.
#include <catch2/catch.hpp>

#include <vector>

#include "schedule/staged_pieces.h"

using coll::sched::CollKind;
using coll::sched::stagedPiece;
using coll::sched::stagedPieceCount;
using coll::sched::stagedPieceElems;

TEST_CASE("staged pieces cover the call once, in order, within the piece bytes", "[staged_pieces]") {
  const CollKind kinds[] = {CollKind::AllReduce, CollKind::AllGather, CollKind::ReduceScatter, CollKind::Broadcast,
                            CollKind::Reduce,    CollKind::Send,      CollKind::Recv};
  for (CollKind k : kinds)
    for (int n : {1, 2, 3, 8})
      for (size_t es : {1, 2, 4, 8})
        for (size_t pieceBytes : {size_t{1}, size_t{64}, size_t{4096}, size_t{65536}, size_t{4} << 20})
          for (size_t count : {size_t{0}, size_t{1}, size_t{63}, size_t{1031}, size_t{65521}, size_t{1000003}}) {
            const size_t pe = stagedPieceElems(k, es, n, pieceBytes);
            const size_t blocks = (k == CollKind::AllGather || k == CollKind::ReduceScatter) ? size_t(n) : 1;
            INFO("kind " << int(k) << " n " << n << " es " << es << " piece " << pieceBytes << " count " << count);
            REQUIRE(pe >= 1);
            // One side of a piece on one rank: blocks x pe elements.
            if (pieceBytes >= es * blocks) {
              REQUIRE(pe * es * blocks <= pieceBytes);
            }
            const size_t pieces = stagedPieceCount(count, pe);
            REQUIRE(pieces >= 1);
            // (one REQUIRE per call, not per piece: up to a million pieces)
            size_t next = 0;
            bool inOrder = true;
            for (size_t i = 0; i < pieces; ++i) {
              const auto p = stagedPiece(count, pe, i);
              inOrder = inOrder && p.offset == next && p.count <= pe;
              if (count > 0) inOrder = inOrder && p.count > 0;  // no empty piece but a count-0 call's only one
              next += p.count;
            }
            REQUIRE(inOrder);
            REQUIRE(next == count);
          }
}

TEST_CASE("staged pieces: the larger side sets the size, offsets stay aligned", "[staged_pieces]") {
  // 4 MiB of floats per piece; all-gather at N = 4 holds 4 blocks on its
  // output side, so each rank contributes a quarter.
  REQUIRE(stagedPieceElems(CollKind::AllReduce, 4, 4, 4u << 20) == (1u << 20));
  REQUIRE(stagedPieceElems(CollKind::AllGather, 4, 4, 4u << 20) == (1u << 18));
  REQUIRE(stagedPieceElems(CollKind::ReduceScatter, 4, 4, 4u << 20) == (1u << 18));
  // N = 3 does not divide the bytes: rounded down to 64 elements, so every
  // piece starts on a 64-element boundary.
  const size_t pe = stagedPieceElems(CollKind::AllGather, 2, 3, 65536);
  REQUIRE(pe % 64 == 0);
  REQUIRE(pe * 2 * 3 <= 65536);
  REQUIRE(pe * 2 * 3 > 65536 - 64 * 2 * 3);
  // Fewer than 64 elements fit: no rounding, and never 0.
  REQUIRE(stagedPieceElems(CollKind::AllReduce, 8, 1, 100) == 12);
  REQUIRE(stagedPieceElems(CollKind::AllGather, 8, 64, 100) == 1);
}

TEST_CASE("staged pieces: a count-0 call is one empty piece; exact multiples leave no empty tail",
          "[staged_pieces]") {
  REQUIRE(stagedPieceCount(0, 1024) == 1);
  REQUIRE(stagedPiece(0, 1024, 0).count == 0);
  REQUIRE(stagedPieceCount(2048, 1024) == 2);
  REQUIRE(stagedPieceCount(2049, 1024) == 3);
  REQUIRE(stagedPiece(2049, 1024, 2).offset == 2048);
  REQUIRE(stagedPiece(2049, 1024, 2).count == 1);
}

TEST_CASE("staged blocks: one per block's bytes of the largest piece side, clamped", "[staged_pieces]") {
  using coll::sched::stagedBlocks;
  const size_t kb = 1024;
  REQUIRE(stagedBlocks(0, 256 * kb, 16) == 1);  // an empty call still runs one block
  REQUIRE(stagedBlocks(8, 256 * kb, 16) == 1);
  REQUIRE(stagedBlocks(256 * kb, 256 * kb, 16) == 1);
  REQUIRE(stagedBlocks(256 * kb + 1, 256 * kb, 16) == 2);
  REQUIRE(stagedBlocks(4096 * kb, 256 * kb, 16) == 16);  // the default 4 MiB piece: every block
  REQUIRE(stagedBlocks(64 * 1024 * kb, 256 * kb, 16) == 16);
  REQUIRE(stagedBlocks(16 * kb, 4 * kb, 16) == 4);
  REQUIRE(stagedBlocks(100, 0, 16) == 16);  // a zero block size means a byte each: the most
  REQUIRE(stagedBlocks(100, 1, 0) == 1);
}
