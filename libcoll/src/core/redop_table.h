// redop_table.h — the pre-multiplied sum ops a communicator created
// (collRedOpCreatePreMulSum).  Handles are collNumOps + index.
#pragma once

#include <cstdint>
#include <mutex>
#include <optional>
#include <vector>

#include "coll.h"
#include "coll/kernels/reduce.h"
#include "coll/base/status.h"

namespace coll::core {

class RedOpTable {
 public:
  Result<collRedOp_t> create(const void* scalar, collDataType_t dtype, collScalarResidence_t residence);
  Status destroy(collRedOp_t op);
  struct Entry {
    bool live = false;
    collDataType_t dtype = collFloat32;
    collScalarResidence_t residence = collScalarHostImmediate;
    kernels::Scalar value{};        // HostImmediate: read at creation
    const void* pointer = nullptr;  // Device residence: read at each call
  };
  // A copy of op's entry (taken under the lock: a create may grow the
  // table meanwhile), or nothing if op is not a live pre-mul op of this
  // table.
  std::optional<Entry> find(collRedOp_t op) const;

 private:
  mutable std::mutex mu_;
  std::vector<Entry> entries_;
};

// Reads one element of dtype at p into the kernels' scalar domain.
kernels::Scalar scalarFromMemory(const void* p, collDataType_t dtype);

}  // namespace coll::core
