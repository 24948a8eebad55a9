// program_launch.cc — see program_launch.h.
#include "device/program_launch.h"

#include <algorithm>

#include "launch.h"
#include "schedule/call_memory.h"
#include "schedule/device_program.h"

namespace coll::device {

Status buildProgramLaunches(const ProgramPlace& at, const DeviceOp* ops, const p2p::CallSig* sigs, size_t n,
                            std::vector<ProgramLaunch>* out) {
  if (n > static_cast<size_t>(kMaxProgramCalls))
    return makeError(collInternalError, "{} calls in one device program (at most {})", n, kMaxProgramCalls);
  ProgramLaunch l{};
  std::vector<sched::DevStep> steps;
  uint64_t maxPiece = 0;
  bool typed = false;
  std::vector<sched::CallMemory> memory(n);
  std::vector<size_t> firstStep(n);  // where each call's steps begin
  for (size_t i = 0; i < n; ++i) {
    const DeviceOp& op = ops[i];
    const uint32_t es = static_cast<uint32_t>(kernels::dtypeSize(op.fn.dtype));
    memory[i] = sched::callMemory(op.kind, op.count, es, op.root, at.rank, at.nranks, op.send, op.recv,
                                  op.deviceScalar);
    firstStep[i] = steps.size();
    sched::DevProgramCall c;
    c.kind = op.kind;
    c.count = op.count;
    c.elemSize = es;
    c.root = op.root;
    if (!sched::appendDeviceProgram(steps, c, static_cast<uint8_t>(i), at.rank, at.nranks, at.regionBytes))
      return makeError(collInvalidUsage, "device {}: the staging region ({} B) is too small for {} ranks",
                       sched::collKindName(op.kind), at.regionBytes, at.nranks);
    maxPiece = std::max<uint64_t>(maxPiece, std::min<uint64_t>(op.count * es, at.regionBytes));
    if (sched::reduces(op.kind) && !typed) {
      l.dtype = op.fn.dtype;
      l.op = op.fn.op;
      typed = true;
    }
    ProgramCall& pc = l.calls[i];
    pc.send = op.send;
    pc.recv = op.recv;
    pc.deviceScalar = op.deviceScalar;
    if (op.fn.premul && op.deviceScalar == nullptr)
      pc.scalarBits = kernels::device::computeScalarBits(op.fn.dtype, op.fn.scalar);
    pc.divisor = op.fn.divisor;
    pc.sig = sigs[i];
    pc.elemSize = es;
    pc.premul = op.fn.premul ? 1u : 0u;
  }
  if (steps.empty()) return Status::ok();
  // A call on memory an earlier call of its launch touches begins a launch
  // of its own (call_memory.h); the chunk unit stays the whole run's, as
  // on every rank.
  std::vector<size_t> startsAt;
  for (size_t call : sched::dependentCalls(memory)) startsAt.push_back(firstStep[call]);
  const std::vector<size_t> ends = sched::splitProgram(steps, kMaxProgramSteps, startsAt);
  if (ends.empty())
    return makeError(collInternalError, "a device program step run does not fit one launch ({} steps)", kMaxProgramSteps);
  l.nranks = at.nranks;
  l.rank = at.rank;
  l.channels = at.channels;
  l.unit = sched::programUnit(maxPiece, at.channels);
  l.bases = at.bases;
  l.inputOffset = at.inputOffset;
  l.resultOffset = at.resultOffset;
  l.channelOffset = at.channelOffset;
  l.timeoutNs = at.timeoutNs;
  l.error = at.error;
  l.control = at.control;
  l.ncalls = static_cast<int>(n);
  size_t begin = 0;
  for (size_t end : ends) {
    l.nsteps = static_cast<int>(end - begin);
    std::copy(steps.begin() + static_cast<std::ptrdiff_t>(begin), steps.begin() + static_cast<std::ptrdiff_t>(end),
              l.steps);
    out->push_back(l);
    begin = end;
  }
  return Status::ok();
}

}  // namespace coll::device
