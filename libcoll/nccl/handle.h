// handle.h — what an ncclComm_t points to: a libcoll communicator plus what
// NCCL's interface has and libcoll's does not.
//
// Why a handle of its own rather than the collComm itself: NCCL lets an
// init inside ncclGroupStart/End finish at ncclGroupEnd (one thread then
// creates every rank of its process), so the program holds its ncclComm_t
// before the communicator exists; a communicator is bound to the CUDA
// device current at its init, which ncclCommCuDevice reports; and NCCL's
// ncclCommAbort, unlike collCommAbort, also frees the communicator, from
// any thread, while another may still be inside a call on it: each call
// holds a lease, and the handle goes only once none is held.
#pragma once

#include <atomic>
#include <cstdint>
#include <map>
#include <mutex>
#include <set>
#include <string>

#include "coll.h"
#include "nccl.h"
#include "coll/base/status.h"

struct ncclComm {
  ~ncclComm();  // frees the registration handles never deregistered
  std::atomic<collComm_t> coll{nullptr};  // set once its init has run
  std::atomic<bool> pendingInit{false};    // an init queued in a group
  std::atomic<bool> finalized{false};      // ncclCommFinalize: no more operations
  std::atomic<int> leases{0};              // calls inside the handle now
  int cudaDevice = -1;                     // current at init; -1: none
  std::mutex mu;                           // the fields below
  std::string lastError;
  std::set<void*> registrations;    // ncclCommRegister handles (collCommRegister's; the comm frees them)
  std::map<void*, size_t> windows;  // ncclCommWindowRegister handles -> bytes
};

namespace coll::nccl {

// A call's hold on a live handle; the communicator stays until released.
class Lease {
 public:
  Lease() = default;
  Lease(ncclComm* h, collComm_t c) : handle_(h), coll_(c) {}
  Lease(Lease&& o) noexcept : handle_(o.handle_), coll_(o.coll_) { o.handle_ = nullptr; }
  Lease& operator=(Lease&& o) noexcept;
  Lease(const Lease&) = delete;
  Lease& operator=(const Lease&) = delete;
  ~Lease() { release(); }
  collComm_t coll() const { return coll_; }
  ncclComm* handle() const { return handle_; }

 private:
  void release();
  ncclComm* handle_ = nullptr;
  collComm_t coll_ = nullptr;
};

ncclComm* newHandle(int cudaDevice);
// Leases h's communicator for one call named api, or says why not: h NULL
// or not a live handle (destroyed, aborted, foreign), its init queued in an
// open group or failed, or (operation) h finalized.
Result<Lease> acquire(ncclComm* h, const char* api, bool operation);
// Takes h out of the live set, waits until no call holds it (the caller
// aborted its communicator first when those calls may be blocked), and
// returns its communicator (NULL when its init never ran) for the caller to
// destroy; h is freed.
Result<collComm_t> retire(ncclComm* h, const char* api);
// Frees a handle whose communicator was never made (a failed init).
void discard(ncclComm* h);

// Records s (not ok) as h's last error (this thread's when h is not live)
// and returns its code as NCCL's.
ncclResult_t fail(ncclComm* h, const Status& s);
// The message ncclGetLastError(h) returns.
const char* lastError(ncclComm* h);

}  // namespace coll::nccl
