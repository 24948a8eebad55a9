// device_group_plan.cc — see device_group_plan.h.
#include "schedule/device_group_plan.h"

namespace coll::sched {
namespace {

size_t aligned16(size_t bytes) { return (bytes + 15) / 16 * 16; }

bool fusableAlone(const DeviceGroupCall& c, int nranks, size_t slotBytes) {
  return nranks > 1 && (c.kind == CollKind::AllReduce || c.kind == CollKind::Reduce) && c.count > 0 && !c.premul &&
         c.count * c.elemSize <= slotBytes;
}

bool sameLaunch(const DeviceGroupCall& a, const DeviceGroupCall& b) {
  return a.stream == b.stream && a.dtype == b.dtype && a.elemSize == b.elemSize && a.op == b.op &&
         a.divisor == b.divisor;
}

// Whether calls[j] touches memory one of calls[first .. j) touches.
bool dependsOnRun(const std::vector<DeviceGroupCall>& calls, size_t first, size_t j) {
  for (size_t i = first; i < j; ++i)
    if (dependsOn(calls[j].memory, calls[i].memory)) return true;
  return false;
}

}  // namespace

bool groupWantsSmallKernel(const std::vector<DeviceGroupCall>& calls, int nranks, size_t slotBytes) {
  if (nranks <= 1) return true;
  for (const DeviceGroupCall& c : calls)
    if (!fusableAlone(c, nranks, slotBytes)) return false;
  return true;
}

std::vector<DeviceGroupRun> planProgramRuns(const std::vector<DeviceGroupCall>& calls, int maxCalls) {
  std::vector<DeviceGroupRun> runs;
  for (size_t i = 0; i < calls.size();) {
    DeviceGroupRun run;
    run.first = i;
    run.fused = true;
    const DeviceGroupCall* typed = nullptr;  // the run's first reducing call
    size_t j = i;
    for (; j < calls.size() && j - i < static_cast<size_t>(maxCalls); ++j) {
      const DeviceGroupCall& c = calls[j];
      if (c.stream != calls[i].stream) break;
      if (reduces(c.kind)) {
        if (typed != nullptr && (c.dtype != typed->dtype || c.op != typed->op)) break;
        if (typed == nullptr) typed = &c;
      }
    }
    run.calls = j - i;
    runs.push_back(std::move(run));
    i = j;
  }
  return runs;
}

std::vector<DeviceGroupRun> planDeviceGroup(const std::vector<DeviceGroupCall>& calls, int nranks, size_t slotBytes,
                                            int maxCalls) {
  std::vector<DeviceGroupRun> runs;
  for (size_t i = 0; i < calls.size();) {
    DeviceGroupRun run;
    run.first = i;
    size_t used = 0, j = i;
    while (j < calls.size() && j - i < static_cast<size_t>(maxCalls) && fusableAlone(calls[j], nranks, slotBytes) &&
           sameLaunch(calls[i], calls[j]) && !dependsOnRun(calls, i, j)) {
      const size_t bytes = aligned16(calls[j].count * calls[j].elemSize);
      if (used + bytes > slotBytes) break;
      run.offsets.push_back(used);
      used += bytes;
      ++j;
    }
    if (j - i >= 2) {
      run.calls = j - i;
      run.fused = true;
    } else {
      run.calls = 1;
      run.offsets.clear();
      j = i + 1;
    }
    runs.push_back(std::move(run));
    i = j;
  }
  return runs;
}

}  // namespace coll::sched
