// shm_doorbell.h — the control page at the start of every segment: failure
// notices from peers, and a doorbell so a rank with nothing to do can sleep
// in the kernel (futex) instead of polling, and be woken by the peer that
// gives it work.
//
// Lost wake-ups are impossible by a Dekker pair of full fences: the sleeper
// sets `sleeping`, fences, re-checks its FIFOs, and only then waits on the
// doorbell value it read; a peer publishes (tail or head), fences, and reads
// `sleeping`.  At least one of them sees the other's write.
#pragma once

#include <linux/futex.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <climits>
#include <cstdint>
#include <ctime>

#include "coll/transport.h"

namespace coll::shm {

constexpr uint64_t kSegmentMagic = 0x636f6c6c73686d33ull;  // "collshm3" (the board grew)
constexpr size_t kHeaderBytes = 12288;  // the control page(s): the board takes 5 KiB

constexpr int kMaxWaitReporters = 512;

struct SegmentHeader {
  uint64_t magic;
  int32_t ownerRank;
  int32_t ownerPid;
  // A peer that fails sets this to -1, writes the message, then stores its
  // rank + 1; the owner sees it on its next slow-path check.
  std::atomic<int32_t> failedRankPlus1;
  alignas(64) std::atomic<uint32_t> doorbell;  // bumped by every wake-up
  std::atomic<uint32_t> sleeping;              // owner is (about to be) asleep
  alignas(64) char failure[1024];
  // Timeout diagnosis: peer at index i among the owner's peers stores the
  // rank it waits for + 2 (0: no report).  Peers past the array do not report.
  std::atomic<int32_t> waitPlus2[kMaxWaitReporters];
  // The small-message board's lines of this segment's owner.
  transport::Board board;
};
static_assert(sizeof(SegmentHeader) <= kHeaderBytes);
static_assert(std::atomic<uint32_t>::is_always_lock_free);

// Rings the bell unconditionally (failure notices, abort).
inline void wakeOwner(SegmentHeader* h) {
  h->doorbell.fetch_add(1, std::memory_order_seq_cst);
  syscall(SYS_futex, reinterpret_cast<uint32_t*>(&h->doorbell), FUTEX_WAKE, INT_MAX, nullptr, nullptr, 0);
}

// Publishes `value` in `counter` (a FIFO's tail or head) and wakes the owner
// of `h` if it sleeps.  The seq_cst exchange is the poster's full fence (one
// locked instruction on x86, cheaper than store + mfence): the 8-byte
// all-reduce pays it twice per hop.
inline void publishAndRing(std::atomic<uint64_t>& counter, uint64_t value, SegmentHeader* h) {
  counter.exchange(value, std::memory_order_seq_cst);
  if (h->sleeping.load(std::memory_order_seq_cst) != 0) wakeOwner(h);
}

// The owner's side: announce, (caller re-checks its FIFOs), then wait.
inline uint32_t prepareToSleep(SegmentHeader* h) {
  h->sleeping.store(1, std::memory_order_relaxed);
  std::atomic_thread_fence(std::memory_order_seq_cst);
  return h->doorbell.load(std::memory_order_relaxed);
}

inline void sleepOnDoorbell(SegmentHeader* h, uint32_t seen, int64_t maxNs) {
  timespec ts{static_cast<time_t>(maxNs / 1000000000), static_cast<long>(maxNs % 1000000000)};
  syscall(SYS_futex, reinterpret_cast<uint32_t*>(&h->doorbell), FUTEX_WAIT, seen, &ts, nullptr, 0);
  h->sleeping.store(0, std::memory_order_relaxed);
}

inline void cancelSleep(SegmentHeader* h) { h->sleeping.store(0, std::memory_order_relaxed); }

}  // namespace coll::shm
