#include "util/status.h"

namespace coll {

Status& Status::addTrace(const char* file, int line) {
  // Breadcrumbs go in one bracket at the end: "msg [a.cc:1 < b.cc:2]".
  if (!message_.empty() && message_.back() == ']') {
    message_.pop_back();
    message_ += fmt::format(" < {}:{}]", file, line);
  } else {
    message_ += fmt::format(" [{}:{}]", file, line);
  }
  return *this;
}

}  // namespace coll
