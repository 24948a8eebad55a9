// peer_barrier.h — the barrier kernel between the ranks of a DeviceComm,
// and the layout of the control block its flags live in.
#pragma once

#include <cuda_runtime_api.h>

namespace coll::p2p {

// A rank's control block (the first 256 B of its allocation), in 64-bit
// words: the barrier flag (word 0), this rank's barrier count (word 8), the
// signature of the call each barrier belongs to in two slots picked by the
// barrier number's parity (words 16-17 and 18-19), the claim of the
// mismatch record (word 24), and when each LL buffer was last cleared
// (words 26-27, ll_line.cuh), and the call this rank's device work is in
// (words 28-30, flag_sync.cuh: announceCall).  A peer may be at most one
// barrier ahead (it cannot pass the next one without us), so the slot of
// barrier k still holds k's signature whenever a peer at barrier k reads it.
constexpr int kFlagWord = 0;
constexpr int kCounterWord = 8;
constexpr int kSigWord = 16;
constexpr int kClaimWord = 24;
constexpr int kLlClearedWord = 26;
constexpr int kCallWord = 28;

// Where exec::packSignature puts the call number in a signature's first
// word (checked by tests/device_emu).
constexpr int kSigSeqShift = 40;
constexpr unsigned long long kSigSeqMask = (1ull << 23) - 1;

// What every barrier compares between ranks: the call's packed signature
// (exec::packSignature).  word == 0: compare nothing.
struct CallSig {
  unsigned long long word = 0;
  unsigned long long count = 0;
};

// The host-mapped error record of a DeviceComm (kErrorWords words):
//   [0] 0, or (kErrTimeout << 32) | (r + 1): waited past the timeout for
//       rank r; or (kErrMismatch << 32) | (r + 1): rank r's call differs;
//   [1..4] for a mismatch: this rank's signature words, then rank r's;
//   [5..7] for a timeout: one bit per rank below kStuckBitRanks that did not
//       arrive (r is the lowest of them, also above that).
// The first record of either kind wins (the claim word of the recording
// rank's control block).
constexpr unsigned long long kErrTimeout = 1, kErrMismatch = 2;
constexpr int kErrorWords = 8;
constexpr int kStuckWord = 5, kStuckWords = 3;
constexpr int kStuckBitRanks = 64 * kStuckWords;

// Enqueues on s: counter += 1 (this rank's, device memory), write sig in
// this rank's slot and publish the count in flags[rank], then wait until
// every flags[r] >= counter and compare every rank's signature with sig.  A
// wait longer than timeoutNs stops waiting and records a timeout; a
// different signature records a mismatch (first one wins).  Earlier work on
// s is visible to the peers once they pass the same barrier.
cudaError_t launchBarrier(unsigned long long* counter, unsigned long long* const* flags, int nranks, int rank,
                          CallSig sig, unsigned long long timeoutNs, unsigned long long* error, cudaStream_t s);
// Loads the barrier kernel now (coll/kernel_launch.h, cuda::load, says why).
cudaError_t loadBarrierKernel();

}  // namespace coll::p2p
