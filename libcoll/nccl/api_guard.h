// api_guard.h — the wall of the NCCL ABI: every exported function runs its
// body through guard(), which turns a Status or an exception into an
// ncclResult_t plus the message ncclGetLastError returns.
#pragma once

#include <exception>
#include <new>

#include "handle.h"

// Exports `name` and its profiling twin p<name> (the same function).
#define NCCL_EXPORT extern "C" __attribute__((visibility("default")))
#define NCCL_PROFILING_ALIAS(name) \
  extern "C" __attribute__((visibility("default"), alias(#name))) decltype(name) p##name;

namespace coll::nccl {

template <typename Body>
ncclResult_t guard(ncclComm* c, Body&& body) noexcept {
  try {
    Status s = body();
    return s.isOk() ? ncclSuccess : fail(c, s);
  } catch (const std::bad_alloc&) {
    return fail(c, Status(collSystemError, "out of host memory"));
  } catch (const std::exception& e) {
    return fail(c, Status(collInternalError, std::string("unexpected exception: ") + e.what()));
  } catch (...) {
    return fail(c, Status(collInternalError, "unexpected exception"));
  }
}

// A libcoll call's result as a Status carrying libcoll's message.
inline Status collStatus(collComm_t cc, collResult_t r) {
  if (r == collSuccess) return Status::ok();
  return Status(r, collGetLastError(cc));
}

}  // namespace coll::nccl
