#include "core/redop_table.h"

#include <cstring>

namespace coll::core {

kernels::Scalar scalarFromMemory(const void* p, collDataType_t dtype) {
  kernels::Scalar s{};
  switch (dtype) {
    case collInt8: { int8_t v; memcpy(&v, p, 1); s.i = v; break; }
    case collUint8: { uint8_t v; memcpy(&v, p, 1); s.u = v; break; }
    case collInt32: { int32_t v; memcpy(&v, p, 4); s.i = v; break; }
    case collUint32: { uint32_t v; memcpy(&v, p, 4); s.u = v; break; }
    case collInt64: { int64_t v; memcpy(&v, p, 8); s.i = v; break; }
    case collUint64: { uint64_t v; memcpy(&v, p, 8); s.u = v; break; }
    case collFloat16: { uint16_t v; memcpy(&v, p, 2); s.f = kernels::halfToFloat(v); break; }
    case collFloat32: { float v; memcpy(&v, p, 4); s.f = v; break; }
    case collFloat64: { double v; memcpy(&v, p, 8); s.f = v; break; }
    case collBfloat16: { uint16_t v; memcpy(&v, p, 2); s.f = kernels::bf16ToFloat(v); break; }
    case collFloat8e4m3: { uint8_t v; memcpy(&v, p, 1); s.f = kernels::e4m3ToFloat(v); break; }
    case collFloat8e5m2: { uint8_t v; memcpy(&v, p, 1); s.f = kernels::e5m2ToFloat(v); break; }
    default: break;
  }
  return s;
}

Result<collRedOp_t> RedOpTable::create(const void* scalar, collDataType_t dtype, collScalarResidence_t residence) {
  Entry e;
  e.live = true;
  e.dtype = dtype;
  e.residence = residence;
  if (residence == collScalarHostImmediate) e.value = scalarFromMemory(scalar, dtype);
  else e.pointer = scalar;
  std::lock_guard<std::mutex> lock(mu_);
  for (size_t i = 0; i < entries_.size(); ++i)
    if (!entries_[i].live) {
      entries_[i] = e;
      return static_cast<collRedOp_t>(collNumOps + i);
    }
  if (entries_.size() >= 1u << 20) return makeError(collInvalidUsage, "too many live pre-mul sum ops (> 1M)");
  entries_.push_back(e);
  return static_cast<collRedOp_t>(collNumOps + entries_.size() - 1);
}

Status RedOpTable::destroy(collRedOp_t op) {
  std::lock_guard<std::mutex> lock(mu_);
  long i = static_cast<long>(op) - collNumOps;
  if (op < collNumOps)
    return makeError(collInvalidArgument, "op {} is a built-in op and cannot be destroyed", static_cast<int>(op));
  if (i >= static_cast<long>(entries_.size()) || !entries_[i].live)
    return makeError(collInvalidArgument, "op {} is not a live op of this communicator", static_cast<int>(op));
  entries_[i].live = false;
  return Status::ok();
}

std::optional<RedOpTable::Entry> RedOpTable::find(collRedOp_t op) const {
  std::lock_guard<std::mutex> lock(mu_);
  long i = static_cast<long>(op) - collNumOps;
  if (i < 0 || i >= static_cast<long>(entries_.size()) || !entries_[i].live) return std::nullopt;
  return entries_[i];
}

}  // namespace coll::core
