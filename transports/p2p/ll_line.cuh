// ll_line.cuh — the P2P transport's low-latency (LL) protocol for small
// messages (nvcc only): data and flag travel in one 8-byte store.
//
// A line is 4 bytes of payload and 4 bytes of epoch, written with one
// aligned 64-bit store (single-copy atomic), so a reader that sees the
// epoch it waits for has the payload too: no fence, no separate flag, no
// barrier kernel.  The epoch (ll_epoch.h) is never 0, so a zeroed line is
// never taken; LL buffers hold only LL lines and are zeroed once per window
// (llEpochStart), so a stale line — an earlier, longer call's — never
// carries the current epoch.  Buffers alternate by the epoch's parity; a rank rewrites
// a buffer two calls later, after it has read every peer's lines of the call
// in between — which those peers wrote after they had finished reading the
// older call.
#pragma once

#include "coll/block_shared.h"
#include "flag_sync.cuh"
#include "ll_epoch.h"

namespace coll::p2p {

// The block's start of an LL call with barrier count `count`, writing into
// `buf` (lines words, this rank's buffer of count's parity): zeroes it when
// this rank has not done so in the current window of 2^31 counts (recorded
// in its control block at ctl[kLlClearedWord + parity]).  Every thread calls
// it; the clearing is complete for the block when it returns.
__device__ __forceinline__ void llEpochStart(unsigned long long* ctl, unsigned long long count, unsigned long long* buf,
                                             size_t words) {
  COLL_SHARED(int, clear);
  if (threadIdx.x == 0) {
    unsigned long long* cleared = ctl + kLlClearedWord + (count & 1);
    const unsigned long long window = llWindow(count);
    clear = *cleared != window;
    if (clear) *cleared = window;
  }
  __syncthreads();
  if (clear) {
    for (size_t i = threadIdx.x; i < words; i += blockDim.x) storeRelaxed(buf + i, 0ull);
    __syncthreads();
  }
}

__device__ __forceinline__ void llStore(unsigned long long* line, unsigned data, unsigned epoch) {
  storeRelaxed(line, static_cast<unsigned long long>(epoch) << 32 | data);
}

// What llLoad also checks at each error poll, given: whether the rank it
// waits for announced this call with other arguments (peerCallDiffers).
struct LlPeerCheck {
  const unsigned long long* peer;  // that rank's control block
  int r;
  CallSig sig;
  unsigned long long* myControl;
};

// Waits until *line carries `epoch` and returns its payload in *data; false
// when timeoutNs passed since `start` (the caller records it), or when the
// communicator's error word says it failed already (read every
// kErrorPollNs, as waitForAll does: a failed communicator's queued calls
// must not each wait out the timeout), or when `check` finds the rank in
// this call with other arguments (the mismatch is recorded).
__device__ __forceinline__ bool llLoad(const unsigned long long* line, unsigned epoch, unsigned long long start,
                                       unsigned long long timeoutNs, unsigned long long* error, unsigned* data,
                                       const LlPeerCheck* check = nullptr) {
  unsigned spins = 0;
  unsigned long long nextErrorPoll = start + kErrorPollNs;
  for (;;) {
    const unsigned long long v = loadRelaxed(line);
    if (static_cast<unsigned>(v >> 32) == epoch) {
      *data = static_cast<unsigned>(v);
      return true;
    }
    // Spin hot first (the usual wait is a few hundred ns), then back off.
    if (++spins > 256) {
      const unsigned long long now = globalNs();
      if (now - start > timeoutNs) return false;
      if (now >= nextErrorPoll) {
        nextErrorPoll = now + kErrorPollNs;
        if (loadRelaxed(error) != 0) return false;
        if (check != nullptr && peerCallDiffers(check->peer, check->r, check->sig, check->myControl, error))
          return false;
      }
      __nanosleep(spins < 4096 ? 32 : 256);
    }
  }
}

}  // namespace coll::p2p
