// abi::nvidia(): the table of NVIDIA's nccl.h (NCCL_NVIDIA_INCLUDE_DIR), the
// interface libnccl.so.2 must match.  Its own includes (the CUDA runtime's
// headers) come first, outside the namespace.
#include <cuda_runtime.h>
#include <cuda_fp16.h>
#include <cuda_bf16.h>
#include <cuda_fp8.h>
#include <climits>
#include <cstddef>

#include "abi_table.h"

namespace nv {
#include NCCL_NVIDIA_HEADER
}

#ifdef NCCL_H_LIBCOLL
#error "abi_table_nvidia.cc must see NVIDIA's nccl.h, not libcoll's"
#endif

#define ABI_NS nv
#define ABI_NS_NAME "nv"
#define ABI_TABLE_FUNCTION abi::nvidia
#include "abi_table_fill.inc"
