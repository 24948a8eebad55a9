// reduce_int64.cu — the Int64 kernels (one file per dtype so they build in parallel).
#include "reduce_impl.cuh"

COLL_DEVICE_INSTANTIATE(Int64)
