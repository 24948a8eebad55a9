// api_guard.h — the wall of the C ABI: every exported function runs its body
// through guard(), which turns a Status into a collResult_t plus a message
// and catches every exception before it can cross into C.
#pragma once

#include <exception>
#include <new>

#include "core/comm.h"

namespace coll::core {

// Body returns a Status.  comm may be null (then the error is per-thread).
template <typename Body>
collResult_t guard(collComm* comm, Body&& body) noexcept {
  try {
    return fail(comm, body());
  } catch (const std::bad_alloc&) {
    return fail(comm, Status(collSystemError, "out of memory"));
  } catch (const std::exception& e) {
    return fail(comm, makeError(collInternalError, "internal error: {}", e.what()));
  } catch (...) {
    return fail(comm, Status(collInternalError, "internal error: unknown exception"));
  }
}

// Checks a handle before anything reads through it.
inline Status checkComm(const collComm* comm, const char* api) {
  if (comm == nullptr) return makeError(collInvalidArgument, "{}: comm is NULL", api);
  if (!isLiveComm(comm))
    return makeError(collInvalidArgument, "{}: comm {} is not a live communicator (destroyed, or never created)", api,
                     static_cast<const void*>(comm));
  return Status::ok();
}

}  // namespace coll::core
