// program_launch.h — a group of device calls as the program kernel's launch
// parameters (program_kernel.h): the steps of every call
// (schedule/device_program.h), cut into launches, with each call's buffers,
// reduction and signature.  Pure host code with no CUDA calls, so the CUDA
// emulation test (tests/device_emu) drives the kernel with exactly what
// DeviceComm launches.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <vector>

#include "device/device_op.h"
#include "device/program_kernel.h"
#include "coll/base/status.h"

namespace coll::device {

// Where the kernel finds this rank's and its peers' memory.
struct ProgramPlace {
  int rank = 0;
  int nranks = 1;
  int channels = 1;
  size_t regionBytes = 0;
  char* const* bases = nullptr;  // device array of every rank's P2P block
  uint64_t inputOffset = 0, resultOffset = 0, channelOffset = 0;
  unsigned long long timeoutNs = ~0ull;
  unsigned long long* error = nullptr;
  unsigned long long* control = nullptr;
};

// ops[0 .. n) (reducing ones of one dtype and op, n <= kMaxProgramCalls;
// their streams are not read), each compared at its barriers as sigs[i],
// as launches, in order, appended to *out: a launch begins at a call that
// touches memory an earlier call of its launch touches (call_memory.h).
// Nothing is appended when every call has count 0.
Status buildProgramLaunches(const ProgramPlace& at, const DeviceOp* ops, const p2p::CallSig* sigs, size_t n,
                            std::vector<ProgramLaunch>* out);

}  // namespace coll::device
