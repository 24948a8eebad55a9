// buffer_kind.h — is a user buffer host or device memory?
//
// Asks the CUDA driver (cuPointerGetAttribute) only when this process has
// already loaded it: libcuda.so.1 is opened with RTLD_NOLOAD, so a host-only
// program never initialises CUDA because of us, and a build without the CUDA
// toolkit still recognises device pointers (and refuses them clearly instead
// of reading them on the host).
#pragma once

#include "coll/base/status.h"

namespace coll::core {

enum class MemKind { Host, Device };

struct BufferKind {
  MemKind kind = MemKind::Host;
  int device = -1;  // CUDA device ordinal for Device
};

// nullptr is Host.  Pinned (cudaHostAlloc/cudaHostRegister) memory is Host:
// the host executor reads it directly.  Managed memory counts as Device.
BufferKind bufferKind(const void* p);

// Whether this process has loaded the CUDA driver (and it initialised):
// when not, every buffer is Host, and a call need not ask per buffer.
// Cheap and thread-safe: an atomic load once the driver is found; before,
// an O(1) check that nothing was loaded since the last search.
bool cudaDriverLoaded();

}  // namespace coll::core
