// staged_wait.h — the stream's side of the host-staged path's hand-off to
// its proxy thread (core/staged_proxy.h): a one-thread kernel that holds the
// stream until the proxy has finished the piece staged in a slot, so the
// copy back that follows reads the piece's result.
#pragma once

#include <cuda_runtime_api.h>

namespace coll::device {

// The words a staging slot shares between its stream and the proxy, in
// host-mapped pinned memory (the first bytes of the slot):
//   posted: pieces the stream handed to the proxy through this slot (a host
//           function adds 1 once the piece's input is in the slot);
//   done:   pieces of this slot the proxy finished (ran, or skipped on a
//           failed communicator).
// A slot's next piece is copied in only after the wait for its previous one
// (stream order), so done <= posted <= done + 1, and a wait for
// done >= posted covers exactly the slot's latest piece — also when a CUDA
// graph replays the call, since the words only grow.
struct StagedSlotControl {
  unsigned long long posted;
  unsigned long long done;
};

// Enqueues on s: wait until control->done >= control->posted (control: the
// device pointer of the slot's words).  Bounded by the proxy, not here: each
// of its host waits is bounded by COLL_TIMEOUT, and a failed or aborted
// communicator's pieces are finished unrun.
cudaError_t launchStagedWait(const StagedSlotControl* control, cudaStream_t s);

}  // namespace coll::device
