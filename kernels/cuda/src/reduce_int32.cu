// reduce_int32.cu — the Int32 kernels (one file per dtype so they build in parallel).
#include "reduce_impl.cuh"

COLL_DEVICE_INSTANTIATE(Int32)
