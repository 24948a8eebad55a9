// reduce_fp8e4m3.cu — the Fp8E4M3 kernels (one file per dtype so they build in parallel).
#include "reduce_impl.cuh"

COLL_DEVICE_INSTANTIATE(Fp8E4M3)
