// ring.h — the ring order shared by the ring and pipeline schedules.
//
// Channel ch uses the forward ring 0 -> 1 -> ... -> N-1 -> 0 when ch is
// even and the reversed ring 0 -> N-1 -> ... -> 1 -> 0 when ch is odd; with
// a ring order (Chunking::ringOrder, e.g. the ranks of each host together:
// ring_order.h) the same over the ranks in that order.  The schedules name
// blocks and chunks by position or by rankAt(), so any order gives the same
// results.
// Why alternate: with two or more channels every neighbour link carries
// traffic in both directions at once (full-duplex links: NVLink, NICs, the
// two halves of a shm FIFO pair), and the ranks that finish each chunk
// first differ between the two halves of the data.
#pragma once

#include <vector>

namespace coll::sched::detail {

// The ring over ranks order[0] -> order[1] -> ... -> order[N-1] -> order[0]
// (rank order when none is given), or that ring reversed.
struct Ring {
  int nranks = 1;
  bool reversed = false;
  std::vector<int> order;  // position -> rank on the forward ring; empty: identity
  std::vector<int> where;  // rank -> position on the forward ring; empty: identity

  // Position of `rank` on the ring (the rank after position p is at p+1).
  int pos(int rank) const {
    const int f = where.empty() ? rank : where[rank];
    return reversed ? (nranks - f) % nranks : f;
  }
  // The rank at position p (any integer; taken modulo nranks).
  int rankAt(long p) const {
    const long m = ((p % nranks) + nranks) % nranks;
    const int f = reversed ? static_cast<int>((nranks - m) % nranks) : static_cast<int>(m);
    return order.empty() ? f : order[f];
  }
  int next(int rank) const { return rankAt(pos(rank) + 1L); }
  int prev(int rank) const { return rankAt(pos(rank) - 1L); }
};

// order: ringOrder of the Chunking (null: rank order), checked by
// validateCommon.
inline Ring ringForChannel(int nranks, int ch, const int* order = nullptr) {
  Ring r{nranks, ch % 2 == 1, {}, {}};
  if (order != nullptr) {
    r.order.assign(order, order + nranks);
    r.where.resize(nranks);
    for (int i = 0; i < nranks; ++i) r.where[order[i]] = i;
  }
  return r;
}

}  // namespace coll::sched::detail
