// reduce_fp8e5m2.cu — the Fp8E5M2 kernels (one file per dtype so they build in parallel).
#include "reduce_impl.cuh"

COLL_DEVICE_INSTANTIATE(Fp8E5M2)
