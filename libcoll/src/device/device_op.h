// device_op.h — one collective on device buffers as the device executor
// (device_comm.h) and the program kernel's launch builder (program_launch.h)
// take it.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>

#include "coll/kernels/reduce.h"
#include "executor/msg_header.h"
#include "schedule/schedules.h"

namespace coll::device {

// One collective on device buffers, validated by the caller.
struct DeviceOp {
  sched::CollKind kind = sched::CollKind::AllReduce;
  const void* send = nullptr;
  void* recv = nullptr;
  size_t count = 0;  // the C API's count
  int root = -1;
  kernels::ReduceFn fn;                 // reducing collectives
  const void* deviceScalar = nullptr;   // pre-mul scalar in device memory, or null
  cudaStream_t stream = nullptr;
  exec::Signature sig;                  // coll, count, dtype, op, root (seq: set by enqueue)
};

}  // namespace coll::device
