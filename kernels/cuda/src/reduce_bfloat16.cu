// reduce_bfloat16.cu — the Bfloat16 kernels (one file per dtype so they build in parallel).
#include "reduce_impl.cuh"

COLL_DEVICE_INSTANTIATE(Bfloat16)
