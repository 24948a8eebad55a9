// shm_segment.h — a POSIX shared-memory segment private to this user.
//
// Created with mode 0600 and O_EXCL, space reserved up front (so a full
// /dev/shm is an error at init, not a SIGBUS later), unlinked as soon as
// every peer has attached so nothing is left behind after a crash.
#pragma once

#include <cstddef>
#include <string>

#include "coll/base/status.h"

namespace coll::shm {

class Segment {
 public:
  Segment() = default;
  ~Segment();
  Segment(const Segment&) = delete;
  Segment& operator=(const Segment&) = delete;
  Segment(Segment&& o) noexcept { *this = std::move(o); }
  Segment& operator=(Segment&& o) noexcept;

  static Result<Segment> create(const std::string& name, size_t bytes);
  static Result<Segment> attach(const std::string& name, size_t bytes);
  // Removes the name (the mapping stays valid).  Idempotent.
  void unlink();

  char* data() const { return static_cast<char*>(addr_); }
  size_t size() const { return size_; }
  const std::string& name() const { return name_; }

 private:
  void* addr_ = nullptr;
  size_t size_ = 0;
  std::string name_;
  bool owner_ = false;  // we created it: unlink on destruction if not yet
};

}  // namespace coll::shm
