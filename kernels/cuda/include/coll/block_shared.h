// block_shared.h — COLL_SHARED(T, name): a variable shared by the threads of
// one block (CUDA's `__shared__ T name;`).  The emulation build
// (kernels/cuda/emulation/cuda_emulation.h) defines it as one variable per
// emulated block, since a `__shared__` there would be one per host thread;
// the kernels use this macro so that the same source means the same there.
#pragma once

#include <type_traits>

#if !defined(COLL_DEVICE_EMULATION)
#define COLL_SHARED(T, name) __shared__ std::type_identity_t<T> name
#endif
