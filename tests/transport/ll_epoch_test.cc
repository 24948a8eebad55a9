// The LL protocol's epochs (transports/p2p/ll_epoch.h), checked on the host:
// never 0, distinct for the counts one buffer can still hold, and the
// zeroing window advancing as designed.
#include <catch2/catch.hpp>

#include "p2p/ll_epoch.h"

using coll::p2p::llEpoch;
using coll::p2p::llWindow;

TEST_CASE("LL epochs are never 0, also around wrap points", "[ll]") {
  const unsigned long long period = 0xffffffffull;
  for (unsigned long long base : {0ull, period - 3, period * 2 - 3, (1ull << 32) - 3, (1ull << 40) - 3, ~0ull - 8})
    for (unsigned long long c = base; c < base + 8; ++c) CHECK(llEpoch(c) != 0u);
  CHECK(llEpoch(1) == 2u);
  CHECK(llEpoch(period - 1) == 0xffffffffu);
  CHECK(llEpoch(period) == 1u);
}

TEST_CASE("one buffer's epochs repeat only after 2 x (2^32 - 1) counts", "[ll]") {
  const unsigned long long period = 0xffffffffull;
  for (unsigned long long c : {1ull, 12345ull, (1ull << 33) + 7}) {
    // Same parity (same buffer), up to two zeroing windows apart: distinct.
    for (unsigned long long d : {2ull, 4ull, 1ull << 20, (1ull << 31), (1ull << 32) - 2, (1ull << 32)})
      CHECK(llEpoch(c + d) != llEpoch(c));
    // The first repeat on the same buffer.
    CHECK(llEpoch(c + 2 * period) == llEpoch(c));
    // An odd distance repeats earlier, but that is the other buffer.
    CHECK(llEpoch(c + period) == llEpoch(c));
    CHECK(((c + period) & 1) != (c & 1));
  }
}

TEST_CASE("the zeroing window changes every 2^31 counts", "[ll]") {
  CHECK(llWindow(0) == 0);
  CHECK(llWindow((1ull << 31) - 1) == 0);
  CHECK(llWindow(1ull << 31) == 1);
  CHECK(llWindow((1ull << 32) + 5) == 2);
}
