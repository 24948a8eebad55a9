// reduce_uint8.cu — the Uint8 kernels (one file per dtype so they build in parallel).
#include "reduce_impl.cuh"

COLL_DEVICE_INSTANTIATE(Uint8)
