// ll_allreduce.h — the one-launch all-reduce (and reduce) of small messages
// over the LL protocol (transports/p2p/ll_line.cuh).
//
// One block writes this rank's input, pre-multiplied, as LL lines into its
// LL buffer (the buffer of the call's epoch parity), after a header of four
// lines carrying the call's signature; then reads every rank's header
// (comparing the signatures: a mismatch is recorded as at a barrier) and
// reduces every rank's lines in rank order, post-op last: the same bits as
// the flag-based one-launch kernel (small_allreduce.h) and the generic path.
// No flag, fence or barrier: each line's epoch says its payload is there.
// COLL_DEVICE_LL_BYTES (default 0: off) picks the calls that take it.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>

#include "device/small_allreduce.h"

namespace coll::device {

// Payload bytes an LL call may carry, and the buffer that holds them: a
// 4-line header plus one 8-byte line per 4 payload bytes, rounded to 256 B.
constexpr size_t kLlMaxBytes = 16 << 10;
constexpr size_t kLlHeaderLines = 4;
constexpr size_t kLlSlotBytes = ((kLlMaxBytes / 4 + kLlHeaderLines) * 8 + 255) / 256 * 256;

// a.slots: every rank's two LL buffers (kLlSlotBytes each, a.slotBytes ==
// kLlSlotBytes); a.flags only for this rank's mismatch claim word (the
// counter is the barriers' own); count * elemsize <= kLlMaxBytes.
cudaError_t launchLlAllReduce(const SmallAllReduceArgs& a, cudaStream_t s);
// Loads every dtype and op's LL kernel now (device/kernel_loading.h).
cudaError_t loadLlAllReduceKernels();

}  // namespace coll::device
