// staged_wait.h — the stream's side of the host-staged path's hand-off to
// its proxy thread (core/staged_proxy.h): a one-thread kernel that holds the
// stream until the proxy has finished a call (its results copied back into
// the user's buffers), so what follows on the stream sees them.
#pragma once

#include <cuda_runtime_api.h>

namespace coll::device {

// The words a staged call shares between its stream and the proxy, in
// host-mapped pinned memory (the first bytes of the call's slot 0):
//   posted:   times the stream reached the call (its host function adds 1
//             and hands the call to the proxy);
//   done:     times the proxy finished it (ran, or skipped on a failed
//             communicator);
//   released: times the wait kernel saw it done — its last access to the
//             call, so once released reaches posted nothing reads the
//             call any more (the host then reuses its slots).
// The stream waits for each run before it can reach the call again, so
// done <= posted <= done + 1, and a wait for done >= posted covers exactly
// the latest run — also when a CUDA graph replays the call, since the
// words only grow.
struct StagedSlotControl {
  unsigned long long posted;
  unsigned long long done;
  unsigned long long released;
};

// Enqueues on s: wait until control->done >= control->posted, then set
// control->released to that (control: the device pointer of the call's
// words).  Bounded by the proxy, not here: each of its host waits is
// bounded by COLL_TIMEOUT, and a failed or aborted communicator's calls are
// finished unrun.
cudaError_t launchStagedWait(StagedSlotControl* control, cudaStream_t s);
// Loads the wait kernel now (device/kernel_loading.h).
cudaError_t loadStagedWaitKernel();

}  // namespace coll::device
