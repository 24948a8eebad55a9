// device_barrier.h — the barrier kernel between the ranks of a DeviceComm.
#pragma once

#include <cuda_runtime_api.h>

namespace coll::device {

// Enqueues on s: counter += 1 (this rank's, device memory), publish it in
// flags[rank], then wait until every flags[r] >= counter.  A wait longer than
// timeoutNs stops waiting and records (1 << 32) | (r + 1) in *error (host-
// mapped) for the first rank r that did not arrive.  Earlier work on s is
// visible to the peers once they pass the same barrier.
cudaError_t launchBarrier(unsigned long long* counter, unsigned long long* const* flags, int nranks, int rank,
                          unsigned long long timeoutNs, unsigned long long* error, cudaStream_t s);

}  // namespace coll::device
