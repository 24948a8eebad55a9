// flag_sync.cuh — the flag protocol shared by the barrier, the one-launch
// and the program kernels (nvcc, or the host emulation of tests/device_emu):
// system-scope release/acquire on the ranks' flag words, a bounded wait for
// every rank, and the comparison of the ranks' call signatures at every
// barrier (layout: peer_barrier.h).
#pragma once

#include "coll/block_shared.h"
#include "peer_barrier.h"

namespace coll::p2p {

#if defined(COLL_DEVICE_EMULATION)
// tests/device_emu runs the kernels on the host: the same orderings with C++
// atomics (the emulation header supplies the CUDA built-ins).
inline unsigned long long globalNs() { return coll::emu::nowNs(); }
inline unsigned long long loadAcquire(const unsigned long long* p) {
  return std::atomic_ref<unsigned long long>(*const_cast<unsigned long long*>(p)).load(std::memory_order_acquire);
}
inline unsigned long long loadRelaxed(const unsigned long long* p) {
  return std::atomic_ref<unsigned long long>(*const_cast<unsigned long long*>(p)).load(std::memory_order_relaxed);
}
inline void storeRelaxed(unsigned long long* p, unsigned long long v) {
  std::atomic_ref<unsigned long long>(*p).store(v, std::memory_order_relaxed);
}
inline void storeRelease(unsigned long long* p, unsigned long long v) {
  std::atomic_ref<unsigned long long>(*p).store(v, std::memory_order_release);
}
#else
__device__ __forceinline__ unsigned long long globalNs() {
  unsigned long long t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

// A flag may be written by another process: system scope.
__device__ __forceinline__ unsigned long long loadAcquire(const unsigned long long* p) {
  unsigned long long v;
  asm volatile("ld.acquire.sys.global.u64 %0, [%1];" : "=l"(v) : "l"(p) : "memory");
  return v;
}

__device__ __forceinline__ unsigned long long loadRelaxed(const unsigned long long* p) {
  unsigned long long v;
  asm volatile("ld.relaxed.sys.global.u64 %0, [%1];" : "=l"(v) : "l"(p) : "memory");
  return v;
}

__device__ __forceinline__ void storeRelaxed(unsigned long long* p, unsigned long long v) {
  asm volatile("st.relaxed.sys.global.u64 [%0], %1;" ::"l"(p), "l"(v) : "memory");
}

__device__ __forceinline__ void storeRelease(unsigned long long* p, unsigned long long v) {
  asm volatile("st.release.sys.global.u64 [%0], %1;" ::"l"(p), "l"(v) : "memory");
}
#endif

// Publishes `value` in *flag after everything this thread (and, after a
// __syncthreads, its block; and earlier work on the stream) wrote.
__device__ __forceinline__ void publish(unsigned long long* flag, unsigned long long value) {
  __threadfence_system();
  storeRelease(flag, value);
}

// One thread: this rank's signature for barrier `target` into its slot, then
// the flag (the release orders the two for every reader of the flag).
__device__ __forceinline__ void arrive(unsigned long long* flag, unsigned long long target, CallSig sig) {
  unsigned long long* slot = flag + kSigWord + 2 * (target & 1);
  storeRelaxed(slot, sig.word);
  storeRelaxed(slot + 1, sig.count);
  publish(flag, target);
}

// Records that rank r's call differs (the first record of a failure wins:
// the claim word lives in this rank's control block, device memory, where
// atomics are cheap; the record is host-mapped and written before the error
// word).
__device__ __forceinline__ void recordMismatch(unsigned long long* myFlag, unsigned long long* error, int r,
                                               CallSig mine, unsigned long long theirWord,
                                               unsigned long long theirCount) {
  if (atomicCAS(myFlag + kClaimWord, 0ull, 1ull) != 0ull) return;
  volatile unsigned long long* e = error;
  e[1] = mine.word;
  e[2] = mine.count;
  e[3] = theirWord;
  e[4] = theirCount;
  __threadfence_system();
  atomicCAS(error, 0ull, (kErrMismatch << 32) | static_cast<unsigned long long>(r + 1));
  __threadfence_system();
}

// ------------------------------------------------ the call a rank is in
//
// Ranks that make the same call with different counts may run it in
// different kernels (a one-launch kernel on one, the staged regions'
// barriers on another): each then waits where the other never arrives, and
// no barrier ever compares their signatures.  So every kernel that waits
// for peers first announces its call in its rank's control block: words
// kCallWord + 1, + 2 hold the signature, then word kCallWord a tag (the
// call number and a hash of the rest).  Plain stores, no fence: nothing
// waits for them, so the announcement costs a call's start nothing it
// would notice (the 8-byte LL all-reduce included).  A rank that waits in
// vain reads the tag of the rank it waits for: the same call number with
// another tag is a mismatch, found within an error poll, not at the
// timeout; the signature words that match that tag are the peer's
// arguments for the report.

// The tag of a call: its number (kSigSeqMask bits) above 40 bits of a hash
// of the rest of its signature; never 0.
__host__ __device__ __forceinline__ unsigned long long callTag(CallSig sig) {
  unsigned long long h = (sig.word & ~(kSigSeqMask << kSigSeqShift)) ^ (sig.count * 0x9e3779b97f4a7c15ull);
  h ^= h >> 31;
  h *= 0xbf58476d1ce4e5b9ull;
  h ^= h >> 29;
  const unsigned long long seq = (sig.word >> kSigSeqShift) & kSigSeqMask;
  return seq << 41 | (h & ((1ull << 41) - 1)) | 1ull;
}

// One thread: this rank is in call `sig` (not announced: sig.word == 0, or
// the same call as before, a later barrier of it).
__device__ __forceinline__ void announceCall(unsigned long long* control, CallSig sig) {
  if (sig.word == 0) return;
  const unsigned long long tag = callTag(sig);
  if (loadRelaxed(control + kCallWord) == tag) return;
  storeRelaxed(control + kCallWord + 1, sig.word);
  storeRelaxed(control + kCallWord + 2, sig.count);
  storeRelaxed(control + kCallWord, tag);
}

// Whether rank r, whose control block is `peer`, announced this call (the
// same number) with other arguments; then the mismatch is recorded (claim:
// myControl) with the peer's signature words once they match its tag (they
// were stored before it and stay: the peer waits in this call for us; a
// bounded number of reads, else the report carries what was read).
__device__ __forceinline__ bool peerCallDiffers(const unsigned long long* peer, int r, CallSig sig,
                                                unsigned long long* myControl, unsigned long long* error) {
  if (peer == nullptr || sig.word == 0) return false;
  const unsigned long long theirs = loadRelaxed(peer + kCallWord), mine = callTag(sig);
  if (theirs == 0 || theirs == mine || theirs >> 41 != mine >> 41) return false;
  CallSig said{loadRelaxed(peer + kCallWord + 1), loadRelaxed(peer + kCallWord + 2)};
  for (int i = 0; i < 1000 && callTag(said) != theirs; ++i) {
    __nanosleep(64);
    said = CallSig{loadRelaxed(peer + kCallWord + 1), loadRelaxed(peer + kCallWord + 2)};
  }
  recordMismatch(myControl, error, r, sig, said.word, said.count);
  return true;
}

// The ranks a block waited for in vain, collected by its threads (bits
// below kStuckBitRanks, and the lowest of all): every thread that gives up
// on a rank marks it, and after a __syncthreads one thread records them all,
// so the report names every absent rank whichever thread gave up first.
struct StuckRanks {
  unsigned long long bits[kStuckWords];
  int first;
};
constexpr int kNoneStuck = 0x7fffffff;

__device__ __forceinline__ void clearStuck(StuckRanks& s) {  // one thread, then __syncthreads
  for (int w = 0; w < kStuckWords; ++w) s.bits[w] = 0;
  s.first = kNoneStuck;
}

__device__ __forceinline__ void markStuck(StuckRanks& s, int r) {
  if (r < kStuckBitRanks) atomicOr(&s.bits[r / 64], 1ull << (r % 64));
  atomicMin(&s.first, r);
}

// One thread, after a __syncthreads: records the timeout (words kStuckWord..
// of the error record, then the error word) unless nothing is stuck or a
// failure was claimed before.  claim: this rank's control block.
__device__ __forceinline__ void recordTimeout(unsigned long long* claim, unsigned long long* error,
                                              const StuckRanks& s) {
  if (s.first == kNoneStuck || atomicCAS(claim + kClaimWord, 0ull, 1ull) != 0ull) return;
  volatile unsigned long long* e = error;
  for (int w = 0; w < kStuckWords; ++w) e[kStuckWord + w] = s.bits[w];
  __threadfence_system();
  atomicCAS(error, 0ull, (kErrTimeout << 32) | static_cast<unsigned long long>(s.first + 1));
  __threadfence_system();
}

// The same for rank r alone, by a thread that cannot meet its block again.
__device__ __forceinline__ void recordTimeoutOf(unsigned long long* claim, unsigned long long* error, int r) {
  StuckRanks s;
  clearStuck(s);
  if (r < kStuckBitRanks) s.bits[r / 64] = 1ull << (r % 64);
  s.first = r;
  recordTimeout(claim, error, s);
}

// How often a waiting thread reads the communicator's error word.  The word
// is host-mapped: each read is a round trip over PCIe (about a microsecond),
// and every thread of every block polls at every barrier, so reading it on
// every poll would put that round trip into each barrier a peer is late to
// (NCCL likewise reads its host abort flag only every so many spins).  A
// failure recorded elsewhere still ends the wait within this much time.
constexpr unsigned long long kErrorPollNs = 4000;

// The block waits until flags[r] >= target for every rank r (thread t waits
// for ranks t, t + blockDim, ...).  Past timeoutNs a thread stops waiting
// and marks the rank stuck; the block then records every rank that did not
// arrive (recordTimeout).  A failure recorded before (by any barrier or
// kernel of this communicator) ends the wait within kErrorPollNs: the
// communicator is failed, and a call's later barriers must not each wait
// out the timeout again.  Flags only grow, so a peer that is already ahead
// passes.  Then every arrived rank's signature of this barrier is compared
// with `sig` (sig.word == 0: not compared); a mismatch is claimed in the
// claim word of myControl (this rank's control block; default: the one
// flags[rank] heads, which is not the case for the program kernel's
// per-block flags).  While it waits, a thread also checks the call the
// awaited rank announced (peerCallDiffers; controls: every rank's control
// block, default flags).  Returns, to every thread, whether all ranks
// arrived with the same signature.
__device__ __forceinline__ bool waitForAll(unsigned long long* const* flags, int nranks, int rank,
                                           unsigned long long target, CallSig sig, unsigned long long timeoutNs,
                                           unsigned long long* error, unsigned long long* myControl = nullptr,
                                           unsigned long long* const* controls = nullptr) {
  COLL_SHARED(StuckRanks, stuck);
  if (threadIdx.x == 0) clearStuck(stuck);
  __syncthreads();
  unsigned long long* const control = myControl != nullptr ? myControl : flags[rank];
  const unsigned long long start = globalNs();
  unsigned long long nextErrorPoll = start + kErrorPollNs;
  bool failed = false;  // this thread's ranks; the block's: __syncthreads_or below
  for (int r = threadIdx.x; r < nranks; r += blockDim.x) {
    unsigned sleep = 32;
    bool arrived = true;
    while (loadAcquire(flags[r]) < target) {
      const unsigned long long now = globalNs();
      if (now >= nextErrorPoll) {  // the error word is host memory: a PCIe round trip, so not every poll
        nextErrorPoll = now + kErrorPollNs;
        if (loadRelaxed(error) != 0 || peerCallDiffers((controls != nullptr ? controls : flags)[r], r, sig, control,
                                                       error)) {  // failed already, or never comes: do not wait
          arrived = false;
          failed = true;
          break;
        }
      }
      if (now - start > timeoutNs) {
        markStuck(stuck, r);
        arrived = false;
        failed = true;
        break;
      }
      __nanosleep(sleep);
      if (sleep < 512) sleep *= 2;
    }
    if (!arrived || sig.word == 0 || r == rank) continue;
    // Ordered after the acquire above: the slot holds barrier target's
    // signature (a peer ahead wrote its next one into the other slot).
    const unsigned long long* slot = flags[r] + kSigWord + 2 * (target & 1);
    const unsigned long long w = loadRelaxed(slot), c = loadRelaxed(slot + 1);
    if (w != sig.word || c != sig.count) {
      recordMismatch(control, error, r, sig, w, c);
      failed = true;
    }
  }
  const bool blockFailed = __syncthreads_or(failed) != 0;
  if (threadIdx.x == 0) recordTimeout(control, error, stuck);
  return !blockFailed;
}

}  // namespace coll::p2p
