// abi::ours(): the table of libcoll's nccl.h (libcoll/nccl/include).
#include <climits>
#include <cstddef>

#include "abi_table.h"

namespace ours {
#include "nccl.h"
}

#ifndef NCCL_H_LIBCOLL
#error "abi_table_ours.cc must see libcoll's nccl.h"
#endif

#define ABI_NS ours
#define ABI_NS_NAME "ours"
#define ABI_TABLE_FUNCTION abi::ours
#include "abi_table_fill.inc"
