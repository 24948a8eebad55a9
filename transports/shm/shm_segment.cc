#include "shm_segment.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace coll::shm {

Segment::~Segment() {
  if (owner_) unlink();
  if (addr_ != nullptr) munmap(addr_, size_);
}

Segment& Segment::operator=(Segment&& o) noexcept {
  if (this != &o) {
    if (owner_) unlink();
    if (addr_ != nullptr) munmap(addr_, size_);
    addr_ = o.addr_;
    size_ = o.size_;
    name_ = std::move(o.name_);
    owner_ = o.owner_;
    o.addr_ = nullptr;
    o.size_ = 0;
    o.owner_ = false;
  }
  return *this;
}

Result<Segment> Segment::create(const std::string& name, size_t bytes) {
  int fd = shm_open(name.c_str(), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  if (fd < 0)
    return makeError(collSystemError, "shm_open('{}') failed: {}", name, strerror(errno));
  Segment s;
  s.name_ = name;
  s.owner_ = true;  // from here on, the destructor unlinks on any failure
  int rc;
  do {
    rc = posix_fallocate(fd, 0, static_cast<off_t>(bytes));
  } while (rc == EINTR);
  if (rc != 0) {
    close(fd);
    return makeError(collSystemError,
                     "cannot reserve {} bytes of shared memory for '{}': {} (is /dev/shm full or too small?)",
                     bytes, name, strerror(rc));
  }
  void* p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  int err = errno;
  close(fd);
  if (p == MAP_FAILED)
    return makeError(collSystemError, "mmap of '{}' ({} bytes) failed: {}", name, bytes, strerror(err));
  s.addr_ = p;
  s.size_ = bytes;
  return s;
}

Result<Segment> Segment::attach(const std::string& name, size_t bytes) {
  int fd = shm_open(name.c_str(), O_RDWR | O_CLOEXEC, 0);
  if (fd < 0)
    return makeError(collSystemError, "cannot attach shared memory '{}': {}", name, strerror(errno));
  struct stat st{};
  if (fstat(fd, &st) != 0 || static_cast<size_t>(st.st_size) < bytes) {
    close(fd);
    return makeError(collSystemError, "shared memory '{}' is {} bytes, expected {}", name,
                     static_cast<long long>(st.st_size), bytes);
  }
  void* p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  int err = errno;
  close(fd);
  if (p == MAP_FAILED)
    return makeError(collSystemError, "mmap of '{}' failed: {}", name, strerror(err));
  Segment s;
  s.addr_ = p;
  s.size_ = bytes;
  s.name_ = name;
  return s;
}

void Segment::unlink() {
  if (owner_ && !name_.empty()) {
    shm_unlink(name_.c_str());
    owner_ = false;
  }
}

}  // namespace coll::shm
