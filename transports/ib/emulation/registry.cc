#include "registry.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

#include "ring.h"
#include "robust_mutex.h"

namespace coll::verbs_emu {
namespace {

constexpr uint64_t kRegistryMagic = 0x31676552756d4576ull;  // "vEmuReg1"

std::string registryPath(const std::string& fabric) { return "/dev/shm/coll_verbs_emu." + fabric; }

// flock serializes join and leave: a joiner never maps a file that the last
// leaver is removing (it sees st_nlink == 0 and opens the new one).
struct FileLock {
  explicit FileLock(int fd) : fd_(fd) {
    while (flock(fd_, LOCK_EX) != 0 && errno == EINTR) {
    }
  }
  ~FileLock() { flock(fd_, LOCK_UN); }
  int fd_;
};

}  // namespace

bool processAlive(pid_t pid) {
  if (pid <= 0) return false;
  if (kill(pid, 0) != 0 && errno == ESRCH) return false;
  char path[64];
  std::snprintf(path, sizeof(path), "/proc/%d/stat", static_cast<int>(pid));
  FILE* f = std::fopen(path, "re");
  if (!f) return false;
  char buf[512] = {};
  size_t n = std::fread(buf, 1, sizeof(buf) - 1, f);
  std::fclose(f);
  buf[n] = 0;
  // "pid (comm) S ...": the state follows the last ')'.
  const char* p = std::strrchr(buf, ')');
  if (!p || p[1] != ' ') return true;
  return p[2] != 'Z' && p[2] != 'X';
}

Registry* Registry::join(const std::string& fabric) {
  const std::string path = registryPath(fabric);
  for (;;) {
    int fd = open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
    if (fd < 0) return nullptr;
    Registry* reg = nullptr;
    {
      FileLock file_lock(fd);
      struct stat st{};
      if (fstat(fd, &st) != 0) {
        close(fd);
        return nullptr;
      }
      if (st.st_nlink == 0) {  // removed by the last leaver meanwhile
        close(fd);
        continue;
      }
      const bool fresh = st.st_size == 0;
      if (fresh && ftruncate(fd, sizeof(RegistryData)) != 0) {
        int saved = errno;
        close(fd);
        errno = saved;
        return nullptr;
      }
      if (!fresh && static_cast<size_t>(st.st_size) != sizeof(RegistryData)) {
        close(fd);
        errno = EPROTO;  // another build's layout
        return nullptr;
      }
      void* p = mmap(nullptr, sizeof(RegistryData), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
      if (p == MAP_FAILED) {
        int saved = errno;
        close(fd);
        errno = saved;
        return nullptr;
      }
      auto* d = static_cast<RegistryData*>(p);
      if (fresh) {
        initRobustMutex(&d->lock);
        d->size = sizeof(RegistryData);
        d->magic = kRegistryMagic;
      } else if (d->magic != kRegistryMagic || d->size != sizeof(RegistryData)) {
        munmap(p, sizeof(RegistryData));
        close(fd);
        errno = EPROTO;
        return nullptr;
      }
      reg = new Registry(d, fd, fabric);
      RobustLock lock(&d->lock);
      reg->sweep(false);
      bool added = false;
      for (auto& pr : d->procs) {
        if (!pr.live) {
          pr.pid = getpid();
          pr.live = 1;
          added = true;
          break;
        }
      }
      if (!added) {
        errno = EMFILE;
        munmap(p, sizeof(RegistryData));
        close(fd);
        delete reg;
        return nullptr;
      }
    }
    return reg;
  }
}

void Registry::leave() {
  {
    FileLock file_lock(fd_);
    bool last = false;
    {
      RobustLock lock(&d_->lock);
      const pid_t me = getpid();
      for (auto& pr : d_->procs)
        if (pr.live && pr.pid == me) pr.live = 0;
      sweep(false);
      last = true;
      for (auto& pr : d_->procs)
        if (pr.live) last = false;
      if (last) sweep(true);
    }
    if (last) unlink(registryPath(fabric_).c_str());
  }
  munmap(d_, sizeof(RegistryData));
  close(fd_);
  delete this;
}

// Frees the records of processes that are not registered and alive (or all).
void Registry::sweep(bool everything) {
  for (auto& pr : d_->procs)
    if (pr.live && !processAlive(pr.pid)) pr.live = 0;
  auto registered = [&](int32_t pid) {
    if (everything) return false;
    for (auto& pr : d_->procs)
      if (pr.live && pr.pid == pid) return true;
    return false;
  };
  for (auto& m : d_->mrs)
    if (m.live && !registered(m.pid)) m.live = 0;
  for (auto& q : d_->qps)
    if (q.live && !registered(q.pid)) q.live = 0;
  for (auto& s : d_->segs)
    if (s.live && !registered(s.pid)) {
      s.live = 0;
      Ring::unlink(segName(s.id));
    }
}

std::string Registry::segName(uint64_t id) const {
  return "/coll_verbs_emu." + fabric_ + "." + std::to_string(id);
}

uint32_t Registry::nextGeneration() {
  // A freed slot's next key differs from the old one: a stale key misses.
  d_->generation = (d_->generation + 1) & 0x1fff;
  if (d_->generation == 0) d_->generation = 1;
  return d_->generation;
}

MrRec* Registry::allocMr(uint32_t* slot) {
  for (uint32_t i = 0; i < kMaxMrs; ++i) {
    MrRec& m = d_->mrs[i];
    if (m.live) continue;
    const uint32_t base = (nextGeneration() << (kMrSlotBits + 1)) | i;
    m.rkey = base;
    m.lkey = base | (1u << kMrSlotBits);
    *slot = i;
    return &m;
  }
  return nullptr;
}

MrRec* Registry::mrByKey(uint32_t key, bool is_lkey) {
  MrRec& m = d_->mrs[key & (kMaxMrs - 1)];
  if (!m.live || (is_lkey ? m.lkey : m.rkey) != key) return nullptr;
  return &m;
}

QpRec* Registry::allocQp(uint32_t* slot) {
  for (uint32_t i = 0; i < kMaxQps; ++i) {
    QpRec& q = d_->qps[i];
    if (q.live) continue;
    // 24-bit QPN; generation >= 1 keeps it clear of the special QPs 0 and 1.
    q.qpn = ((nextGeneration() << kQpSlotBits) | i) & 0xffffff;
    if (q.qpn < 2) q.qpn |= 1u << kQpSlotBits;
    *slot = i;
    return &q;
  }
  return nullptr;
}

QpRec* Registry::qpByNum(uint32_t qpn) {
  QpRec& q = d_->qps[qpn & (kMaxQps - 1)];
  if (!q.live || q.qpn != qpn) return nullptr;
  return &q;
}

bool Registry::addSeg(uint64_t id, pid_t pid) {
  for (auto& s : d_->segs) {
    if (s.live) continue;
    s.id = id;
    s.pid = pid;
    s.live = 1;
    return true;
  }
  return false;
}

void Registry::freeSeg(uint64_t id) {
  for (auto& s : d_->segs) {
    if (s.live && s.id == id) {
      s.live = 0;
      Ring::unlink(segName(id));
    }
  }
}

}  // namespace coll::verbs_emu
