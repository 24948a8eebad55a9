// ll_epoch.h — the LL protocol's epoch arithmetic (ll_line.cuh), host- and
// device-callable so that tests check it without a GPU.
//
// epoch(count) = count mod (2^32 - 1) + 1: never 0 (a zeroed line is never
// taken), and two counts of one parity (one LL buffer) share an epoch only
// 2 x (2^32 - 1) counts apart.  A rank zeroes each LL buffer at its first
// LL call in every window of 2^31 counts, so a line is never older than two
// windows (2^32 counts) when it is read: a stale line never carries the
// current epoch.
#pragma once

#include <cstdint>

#if defined(__CUDACC__)
#define COLL_LL_HD __host__ __device__
#else
#define COLL_LL_HD
#endif

namespace coll::p2p {

constexpr unsigned long long kLlEpochPeriod = 0xffffffffull;  // 2^32 - 1
constexpr int kLlWindowShift = 31;                          // buffers zeroed once per 2^31 counts

COLL_LL_HD constexpr unsigned llEpoch(unsigned long long count) {
  return static_cast<unsigned>(count % kLlEpochPeriod) + 1u;
}

COLL_LL_HD constexpr unsigned long long llWindow(unsigned long long count) { return count >> kLlWindowShift; }

// The oldest a line can be when read, in counts, must stay below the
// distance at which a buffer's epochs repeat.
static_assert((2ull << kLlWindowShift) < 2 * kLlEpochPeriod, "LL lines could outlive their epoch");

}  // namespace coll::p2p
