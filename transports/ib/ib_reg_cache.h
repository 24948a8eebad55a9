// ib_reg_cache.h — user buffers registered with the NICs, for sends that
// leave straight from them (RDMA writes whose payload the NIC reads from
// the caller's memory: one copy fewer than through a staging slot).
//
// Only memory the user registered (ncclCommRegister) is here: the caller
// promises it stays allocated until it deregisters.  Registering whatever
// buffer a call passes would be unsafe: an MR pins the pages it found, so
// after the user frees the buffer and the allocator maps new pages at the
// same address, the NIC would read the old ones.  Each region is
// registered once on every NIC (local read only: the least access a send
// needs), counted (register twice, deregister twice), and released at
// deregistration or when the transport is destroyed.
#pragma once

#include <atomic>
#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <vector>

#include "coll/base/status.h"
#include "ib/ib_qp.h"

namespace coll::ib {

class RegCache {
 public:
  Status add(const VerbsApi& api, const std::vector<IbNic>& nics, const void* p, size_t bytes);
  // False if p was not registered.
  bool remove(const VerbsApi& api, const void* p);
  void clear(const VerbsApi& api);
  // The lkey on NIC `nic` of a registered region holding [p, p + bytes).
  std::optional<uint32_t> lkey(const void* p, size_t bytes, size_t nic) const;
  bool any() const { return count_.load(std::memory_order_acquire) > 0; }

 private:
  struct Region {
    size_t bytes = 0;
    int refs = 0;
    std::vector<ibv_mr*> mrs;  // per NIC
  };
  mutable std::mutex mu_;
  std::map<uintptr_t, Region> regions_;  // by start address
  std::atomic<size_t> count_{0};
};

}  // namespace coll::ib
