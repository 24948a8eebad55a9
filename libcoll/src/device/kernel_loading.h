// kernel_loading.h — every kernel libcoll launches, loaded on a GPU once per
// process, before the first of them can spin there.
//
// CUDA loads kernels lazily by default, and a load may wait for the
// device's running kernels (coll/kernel_launch.h, cuda::load).  Ours spin
// until a peer or the proxy acts: a barrier, a one-launch all-reduce, a
// program step, a staged call's piece.  A first launch behind one of them
// would block its caller until it ends, and where the caller is what it
// waits for (ranks of one process on one GPU, a staged call's peer) until
// its timeout.  Loading them all at a communicator's first device call
// avoids both: every rank makes that call at the same point (a collective),
// before its first kernel, so no kernel of the communicator runs yet.
#pragma once

#include "coll/base/status.h"

namespace coll::device {

// Loads every kernel on `device` (a negative one: the current device): the
// reductions, the barrier, send/recv, the one-launch and program kernels,
// the staged path's.  Once per process and device; later calls return at
// once.
// On an error (no kernel image for this GPU, say) nothing is marked
// loaded, and the error names the GPU.
Status loadKernels(int device);

}  // namespace coll::device
