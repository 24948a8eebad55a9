// doubling_shape.h — the rank layout shared by the recursive-doubling
// schedules (doubling_all_reduce.cc, doubling_all_gather.cc) and their cost.
//
// Recursive doubling pairs rank v with v ^ d for d = 1, 2, 4, ... < P, which
// needs a power of two P of ranks.  With N = P + rem ranks (P the largest
// power of two <= N), the first 2*rem ranks fold in pairs: even rank 2i
// hands its data to odd rank 2i+1 before the doubling and gets the result
// back after it ("folded out"); the other P ranks take part, as virtual
// ranks 0..P-1 in rank order:
//   virtual v < rem  -> rank 2v+1   (it also holds rank 2v's block)
//   virtual v >= rem -> rank v+rem
// Virtual v's blocks (all-gather) are ranks [blockLo(v), blockLo(v+1)):
// blockLo is monotonic, so any range of virtual ranks is one contiguous
// range of blocks.  Pure arithmetic, no allocation.
#pragma once

namespace coll::sched {

struct DoublingShape {
  int nranks = 1;
  int P = 1;    // participants in the doubling: largest power of two <= nranks
  int rem = 0;  // nranks - P: the number of folded pairs

  explicit DoublingShape(int n) : nranks(n) {
    while (P * 2 <= n) P *= 2;
    rem = n - P;
  }
  // Doubling rounds: log2 P.
  int rounds() const {
    int l = 0;
    while ((1 << l) < P) ++l;
    return l;
  }
  // Hops of one chunk: the rounds, plus the fold in and out when rem > 0.
  int hops() const { return rounds() + (rem > 0 ? 2 : 0); }
  // Rank r gives its data to r+1 and waits for the result (even r < 2 rem).
  bool foldedOut(int r) const { return r < 2 * rem && r % 2 == 0; }
  // Rank r holds rank r-1's data too (odd r < 2 rem).
  bool foldsIn(int r) const { return r < 2 * rem && r % 2 == 1; }
  // The virtual rank of a participating rank (not foldedOut).
  int virtualOf(int r) const { return r < 2 * rem ? r / 2 : r - rem; }
  int rankOf(int v) const { return v < rem ? 2 * v + 1 : v + rem; }
  // First block of virtual rank v (v == P gives nranks).
  int blockLo(int v) const { return v < rem ? 2 * v : v + rem; }
};

}  // namespace coll::sched
