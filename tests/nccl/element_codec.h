// element_codec.h — nccl_program's elements: NCCL datatypes to and from
// double, exact for the small integers the checks use (fp16 and bf16
// included; fp8 is not used).
#pragma once

#include <nccl.h>

#include <cstddef>

namespace ncclprog {

size_t elemBytes(ncclDataType_t t);
void encode(ncclDataType_t t, double v, void* out);
double decode(ncclDataType_t t, const void* in);

}  // namespace ncclprog
