#include "ring.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "robust_mutex.h"

namespace coll::verbs_emu {

constexpr uint64_t kRingMagic = 0x676e6952756d4576ull;  // "vEmuRing"

struct Ring::Header {
  uint64_t magic;  // written last: a mapper never sees a half-built ring
  pthread_mutex_t lock;
  uint32_t capacity;
  uint32_t entry_size;
  uint64_t head;  // next to pop
  uint64_t tail;  // next to push
  uint32_t overflow;
  uint32_t pad;
};

std::unique_ptr<Ring> Ring::create(const std::string& name, uint32_t capacity, uint32_t entry_size) {
  const size_t bytes = sizeof(Header) + static_cast<size_t>(capacity) * entry_size;
  int fd = shm_open(name.c_str(), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  if (fd < 0) return nullptr;
  void* p = MAP_FAILED;
  if (ftruncate(fd, static_cast<off_t>(bytes)) == 0)
    p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  int saved = errno;
  close(fd);
  if (p == MAP_FAILED) {
    shm_unlink(name.c_str());
    errno = saved;
    return nullptr;
  }
  auto* h = static_cast<Header*>(p);
  if (!initRobustMutex(&h->lock)) {
    munmap(p, bytes);
    shm_unlink(name.c_str());
    errno = ENOMEM;
    return nullptr;
  }
  h->capacity = capacity;
  h->entry_size = entry_size;
  __atomic_store_n(&h->magic, kRingMagic, __ATOMIC_RELEASE);
  return std::unique_ptr<Ring>(new Ring(h, bytes));
}

std::unique_ptr<Ring> Ring::open(const std::string& name) {
  int fd = shm_open(name.c_str(), O_RDWR | O_CLOEXEC, 0);
  if (fd < 0) return nullptr;
  struct stat st{};
  void* p = MAP_FAILED;
  if (fstat(fd, &st) == 0 && static_cast<size_t>(st.st_size) >= sizeof(Header))
    p = mmap(nullptr, static_cast<size_t>(st.st_size), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  else
    errno = EPROTO;
  int saved = errno;
  close(fd);
  if (p == MAP_FAILED) {
    errno = saved;
    return nullptr;
  }
  auto* h = static_cast<Header*>(p);
  if (__atomic_load_n(&h->magic, __ATOMIC_ACQUIRE) != kRingMagic) {
    munmap(p, static_cast<size_t>(st.st_size));
    errno = EPROTO;
    return nullptr;
  }
  return std::unique_ptr<Ring>(new Ring(h, static_cast<size_t>(st.st_size)));
}

void Ring::unlink(const std::string& name) { shm_unlink(name.c_str()); }

Ring::~Ring() { munmap(h_, bytes_); }

uint8_t* Ring::slot(uint64_t index) const {
  return reinterpret_cast<uint8_t*>(h_ + 1) + (index % h_->capacity) * h_->entry_size;
}

bool Ring::push(const void* entry, bool mark_overflow) {
  RobustLock lock(&h_->lock);
  if (h_->overflow) return false;
  if (h_->tail - h_->head >= h_->capacity) {
    if (mark_overflow) h_->overflow = 1;
    return false;
  }
  std::memcpy(slot(h_->tail), entry, h_->entry_size);
  ++h_->tail;
  return true;
}

uint32_t Ring::pop(void* out, uint32_t max) {
  RobustLock lock(&h_->lock);
  uint32_t n = 0;
  auto* dst = static_cast<uint8_t*>(out);
  while (n < max && h_->head != h_->tail) {
    std::memcpy(dst + static_cast<size_t>(n) * h_->entry_size, slot(h_->head), h_->entry_size);
    ++h_->head;
    ++n;
  }
  return n;
}

uint32_t Ring::size() {
  RobustLock lock(&h_->lock);
  return static_cast<uint32_t>(h_->tail - h_->head);
}

bool Ring::overflowed() {
  RobustLock lock(&h_->lock);
  return h_->overflow != 0;
}

uint32_t Ring::capacity() const { return h_->capacity; }

}  // namespace coll::verbs_emu
