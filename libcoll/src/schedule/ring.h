// ring.h — the ring order shared by the ring and pipeline schedules.
//
// Channel ch uses the forward ring 0 -> 1 -> ... -> N-1 -> 0 when ch is
// even and the reversed ring 0 -> N-1 -> ... -> 1 -> 0 when ch is odd.
// Why alternate: with two or more channels every neighbour link carries
// traffic in both directions at once (full-duplex links: NVLink, NICs, the
// two halves of a shm FIFO pair), and the ranks that finish each chunk
// first differ between the two halves of the data.
#pragma once

namespace coll::sched::detail {

struct Ring {
  int nranks = 1;
  bool reversed = false;

  // Position of `rank` on the ring (the rank after position p is at p+1).
  int pos(int rank) const { return reversed ? (nranks - rank) % nranks : rank; }
  // The rank at position p (any integer; taken modulo nranks).
  int rankAt(long p) const {
    const long m = ((p % nranks) + nranks) % nranks;
    return reversed ? static_cast<int>((nranks - m) % nranks) : static_cast<int>(m);
  }
  int next(int rank) const { return rankAt(pos(rank) + 1L); }
  int prev(int rank) const { return rankAt(pos(rank) - 1L); }
};

inline Ring ringForChannel(int nranks, int ch) { return Ring{nranks, ch % 2 == 1}; }

}  // namespace coll::sched::detail
