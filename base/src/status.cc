#include "coll/base/status.h"

namespace coll {

Status& Status::addTrace(const char* file, int line) {
  // Breadcrumbs go in one bracket at the end: "msg [a.cc:1 < b.cc:2]".  Its
  // start is remembered: a message may end in a bracket of its own.
  if (traceAt_ != std::string::npos) {
    message_.pop_back();
    message_ += fmt::format(" < {}:{}]", file, line);
  } else {
    traceAt_ = message_.size();
    message_ += fmt::format(" [{}:{}]", file, line);
  }
  return *this;
}

Status Status::withCause(const std::string& cause) const {
  Status s(code_, cause);
  if (traceAt_ != std::string::npos) {
    s.traceAt_ = cause.size();
    s.message_ += message_.substr(traceAt_);
  }
  return s;
}

}  // namespace coll
