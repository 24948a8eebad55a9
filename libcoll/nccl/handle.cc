#include "handle.h"

#include <chrono>
#include <thread>
#include <unordered_set>

#include "result_map.h"

ncclComm::~ncclComm() {
  for (auto& w : windows) delete static_cast<char*>(w.first);
}

namespace coll::nccl {
namespace {

std::mutex& liveMu() {
  static std::mutex m;
  return m;
}
std::unordered_set<const ncclComm*>& live() {
  static auto* s = new std::unordered_set<const ncclComm*>;  // outlives every static destructor
  return *s;
}
bool isLiveLocked(const ncclComm* h) { return h != nullptr && live().count(h) != 0; }
thread_local std::string tlsLastError;

}  // namespace

Lease& Lease::operator=(Lease&& o) noexcept {
  if (this != &o) {
    release();
    handle_ = o.handle_;
    coll_ = o.coll_;
    o.handle_ = nullptr;
  }
  return *this;
}

void Lease::release() {
  if (handle_ != nullptr) handle_->leases.fetch_sub(1);
  handle_ = nullptr;
}

ncclComm* newHandle(int cudaDevice) {
  auto* h = new ncclComm;
  h->cudaDevice = cudaDevice;
  std::lock_guard<std::mutex> lock(liveMu());
  live().insert(h);
  return h;
}

Result<Lease> acquire(ncclComm* h, const char* api, bool operation) {
  if (h == nullptr) return makeError(collInvalidArgument, "{}: comm is NULL", api);
  std::lock_guard<std::mutex> lock(liveMu());
  if (!isLiveLocked(h))
    return makeError(collInvalidArgument, "{}: comm {} is not a live communicator (destroyed, aborted or never made)",
                     api, static_cast<const void*>(h));
  collComm_t c = h->coll.load();
  if (c == nullptr) {
    if (h->pendingInit.load())
      return makeError(collInvalidUsage, "{}: the communicator's init is queued in an open group; it runs at ncclGroupEnd",
                       api);
    std::lock_guard<std::mutex> hl(h->mu);
    return makeError(collInvalidUsage, "{}: the communicator's init failed: {}", api, h->lastError);
  }
  if (operation && h->finalized.load())
    return makeError(collInvalidUsage, "{}: the communicator was finalized (ncclCommFinalize); only destroy is left", api);
  h->leases.fetch_add(1);
  return Lease(h, c);
}

Result<collComm_t> retire(ncclComm* h, const char* api) {
  {
    std::lock_guard<std::mutex> lock(liveMu());
    if (!isLiveLocked(h))
      return makeError(collInvalidArgument, "{}: comm {} is not a live communicator (destroyed, aborted or never made)",
                       api, static_cast<const void*>(h));
    if (h->pendingInit.load())
      return makeError(collInvalidUsage, "{}: the communicator's init is queued in an open group; end the group first",
                       api);
    live().erase(h);
  }
  // No new lease can start now; the ones held end with their calls, each
  // bounded by the communicator's timeout (promptly after an abort).
  while (h->leases.load() != 0) std::this_thread::sleep_for(std::chrono::microseconds(200));
  collComm_t c = h->coll.load();
  delete h;
  return c;
}

void discard(ncclComm* h) {
  {
    std::lock_guard<std::mutex> lock(liveMu());
    live().erase(h);
  }
  delete h;
}

ncclResult_t fail(ncclComm* h, const Status& s) {
  std::lock_guard<std::mutex> lock(liveMu());
  if (isLiveLocked(h)) {
    std::lock_guard<std::mutex> hl(h->mu);
    h->lastError = s.message();
  } else {
    tlsLastError = s.message();
  }
  return toNccl(s.code());
}

const char* lastError(ncclComm* h) {
  std::lock_guard<std::mutex> lock(liveMu());
  if (!isLiveLocked(h)) return tlsLastError.c_str();
  std::lock_guard<std::mutex> hl(h->mu);
  if (!h->lastError.empty()) return h->lastError.c_str();
  if (collComm_t c = h->coll.load()) return collGetLastError(c);
  return "";
}

}  // namespace coll::nccl
