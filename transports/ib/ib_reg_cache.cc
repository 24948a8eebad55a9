#include "ib/ib_reg_cache.h"

#include <cerrno>
#include <cstring>

namespace coll::ib {

Status RegCache::add(const VerbsApi& api, const std::vector<IbNic>& nics, const void* p, size_t bytes) {
  std::lock_guard<std::mutex> lock(mu_);
  const auto key = reinterpret_cast<uintptr_t>(p);
  if (auto it = regions_.find(key); it != regions_.end() && it->second.bytes == bytes) {
    ++it->second.refs;
    return Status::ok();
  }
  Region r;
  r.bytes = bytes;
  r.refs = 1;
  for (const IbNic& nic : nics) {
    ibv_mr* mr = api.regMr(nic.pd, const_cast<void*>(p), bytes, 0);
    if (!mr) {
      const int err = errno;
      for (ibv_mr* m : r.mrs) api.deregMr(m);
      return makeError(collSystemError, "ib: registering {} bytes at {} on {} failed: {}", bytes, p, nic.label(),
                       std::strerror(err));
    }
    r.mrs.push_back(mr);
  }
  // Another size at the same address replaces the old registration.
  if (auto it = regions_.find(key); it != regions_.end())
    for (ibv_mr* m : it->second.mrs) api.deregMr(m);
  regions_[key] = std::move(r);
  count_.store(regions_.size(), std::memory_order_release);
  return Status::ok();
}

bool RegCache::remove(const VerbsApi& api, const void* p) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = regions_.find(reinterpret_cast<uintptr_t>(p));
  if (it == regions_.end()) return false;
  if (--it->second.refs == 0) {
    for (ibv_mr* m : it->second.mrs) api.deregMr(m);
    regions_.erase(it);
  }
  count_.store(regions_.size(), std::memory_order_release);
  return true;
}

void RegCache::clear(const VerbsApi& api) {
  std::lock_guard<std::mutex> lock(mu_);
  for (auto& [key, r] : regions_)
    for (ibv_mr* m : r.mrs) api.deregMr(m);
  regions_.clear();
  count_.store(0, std::memory_order_release);
}

std::optional<uint32_t> RegCache::lkey(const void* p, size_t bytes, size_t nic) const {
  std::lock_guard<std::mutex> lock(mu_);
  const auto at = reinterpret_cast<uintptr_t>(p);
  auto it = regions_.upper_bound(at);
  if (it == regions_.begin()) return std::nullopt;
  --it;
  const Region& r = it->second;
  if (at - it->first > r.bytes || bytes > r.bytes - (at - it->first) || nic >= r.mrs.size()) return std::nullopt;
  return r.mrs[nic]->lkey;
}

}  // namespace coll::ib
