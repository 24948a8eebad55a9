// status.h — how errors travel inside libcoll.
//
// A Status is a collResult_t plus a message that names the argument, or the
// rank and step.  Functions return it (or Result<T>); COLL_CHECK carries a
// failure up and appends the file:line it passed, so a message reads like
// "rank 3 timed out ... [executor.cc:120 < comm.cc:88]".  Exceptions never
// cross the C ABI: the API layer turns any that escape into a Status.
#pragma once

#include <string>
#include <utility>

#include <fmt/format.h>

#include "coll.h"

namespace coll {

class [[nodiscard]] Status {
 public:
  Status() = default;
  Status(collResult_t code, std::string message)
      : code_(code), message_(std::move(message)) {}

  static Status ok() { return {}; }
  bool isOk() const { return code_ == collSuccess; }
  collResult_t code() const { return code_; }
  const std::string& message() const { return message_; }
  // The message without its breadcrumbs.
  std::string cause() const { return traceAt_ == std::string::npos ? message_ : message_.substr(0, traceAt_); }
  // The same code and breadcrumbs with another cause (to add context).
  Status withCause(const std::string& cause) const;

  // Appends a breadcrumb; used by COLL_CHECK on the way up.
  Status& addTrace(const char* file, int line);

 private:
  collResult_t code_ = collSuccess;
  std::string message_;
  size_t traceAt_ = std::string::npos;  // where " [file:line < ...]" starts
};

template <typename... Args>
Status makeError(collResult_t code, fmt::format_string<Args...> f, Args&&... args) {
  return Status(code, fmt::format(f, std::forward<Args>(args)...));
}

// Result<T>: a value or the Status that explains its absence.
template <typename T>
class [[nodiscard]] Result {
 public:
  Result(T value) : value_(std::move(value)) {}  // NOLINT: implicit on purpose
  Result(Status s) : status_(std::move(s)) {}    // NOLINT
  bool isOk() const { return status_.isOk(); }
  const Status& status() const { return status_; }
  T& value() { return value_; }
  T&& take() { return std::move(value_); }

 private:
  Status status_;
  T value_{};
};

}  // namespace coll

#define COLL_BASENAME_ (__builtin_strrchr(__FILE__, '/') ? __builtin_strrchr(__FILE__, '/') + 1 : __FILE__)

// Return the Status of expr from the enclosing function if it failed.
#define COLL_CHECK(expr)                                   \
  do {                                                     \
    ::coll::Status coll_status_ = (expr);                  \
    if (!coll_status_.isOk()) {                            \
      coll_status_.addTrace(COLL_BASENAME_, __LINE__);     \
      return coll_status_;                                 \
    }                                                      \
  } while (0)
