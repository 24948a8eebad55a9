#include "checkpoint/checkpoint.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include <atomic>
#include <bit>
#include <cerrno>
#include <cstring>
#include <set>
#include <unordered_map>

namespace coll::train {

static_assert(std::endian::native == std::endian::little,
              "the checkpoint format stores little-endian values with memcpy");

namespace {

std::atomic<detail::CheckpointHook> gHook{nullptr};

void hook(const char* stage) {
  if (detail::CheckpointHook h = gHook.load()) h(stage);
}

uint32_t crcUpdate(uint32_t crc, const void* p, size_t n) {
  return static_cast<uint32_t>(crc32_z(crc, static_cast<const Bytef*>(p), n));
}

Status writeAll(int fd, const void* p, size_t n, const std::string& file) {
  const char* c = static_cast<const char*>(p);
  while (n > 0) {
    ssize_t w = ::write(fd, c, n);
    if (w < 0) {
      if (errno == EINTR) continue;
      return makeError(collSystemError, "cannot write '{}': {}", file, std::strerror(errno));
    }
    c += w;
    n -= static_cast<size_t>(w);
  }
  return Status::ok();
}

// Buffered payload writer that keeps the CRC and the byte count.
class PayloadWriter {
 public:
  PayloadWriter(int fd, std::string file) : fd_(fd), file_(std::move(file)) { buf_.reserve(kBuf); }

  void put(const void* p, size_t n) {
    if (!st_.isOk() || n == 0) return;
    crc_ = crcUpdate(crc_, p, n);
    bytes_ += n;
    if (buf_.size() + n > kBuf) {
      flush();
      if (n >= kBuf) {
        if (st_.isOk()) st_ = writeAll(fd_, p, n, file_);
        return;
      }
    }
    const auto* c = static_cast<const uint8_t*>(p);
    buf_.insert(buf_.end(), c, c + n);
  }
  template <typename T>
  void pod(T v) {
    put(&v, sizeof v);
  }
  void str(const std::string& s) {
    pod(static_cast<uint32_t>(s.size()));
    put(s.data(), s.size());
  }
  void flush() {
    if (st_.isOk() && !buf_.empty()) st_ = writeAll(fd_, buf_.data(), buf_.size(), file_);
    buf_.clear();
  }
  Status status() const { return st_; }
  uint32_t crc() const { return crc_; }
  uint64_t bytes() const { return bytes_; }

 private:
  static constexpr size_t kBuf = 1 << 20;
  int fd_;
  std::string file_;
  std::vector<uint8_t> buf_;
  uint32_t crc_ = static_cast<uint32_t>(crc32_z(0, nullptr, 0));
  uint64_t bytes_ = 0;
  Status st_;
};

std::string dirOf(const std::string& path) {
  const size_t slash = path.find_last_of('/');
  if (slash == std::string::npos) return ".";
  if (slash == 0) return "/";
  return path.substr(0, slash);
}

void putLe32(uint8_t* p, uint32_t v) { std::memcpy(p, &v, 4); }
void putLe64(uint8_t* p, uint64_t v) { std::memcpy(p, &v, 8); }

// Bounds-checked reader over the payload.
class PayloadReader {
 public:
  PayloadReader(const uint8_t* p, size_t n, const std::string& file) : p_(p), n_(n), file_(file) {}

  template <typename T>
  bool pod(T* v, const char* what) {
    if (!need(sizeof(T), what)) return false;
    std::memcpy(v, p_ + off_, sizeof(T));
    off_ += sizeof(T);
    return true;
  }
  bool str(std::string* s, const char* what) {
    uint32_t len = 0;
    if (!pod(&len, what) || !need(len, what)) return false;
    s->assign(reinterpret_cast<const char*>(p_ + off_), len);
    off_ += len;
    return true;
  }
  bool floats(std::vector<float>* v, uint64_t count, const std::string& name) {
    if (count > (n_ - off_) / sizeof(float)) {
      st_ = makeError(collInvalidArgument,
                      "checkpoint '{}' is malformed: tensor '{}' claims {} floats, only {} bytes "
                      "remain",
                      file_, name, count, n_ - off_);
      return false;
    }
    v->resize(static_cast<size_t>(count));
    if (count > 0) std::memcpy(v->data(), p_ + off_, count * sizeof(float));
    off_ += count * sizeof(float);
    return true;
  }
  size_t remaining() const { return n_ - off_; }
  size_t offset() const { return off_; }
  const Status& status() const { return st_; }

 private:
  bool need(size_t k, const char* what) {
    if (k > n_ - off_) {
      st_ = makeError(collInvalidArgument,
                      "checkpoint '{}' is malformed: {} at payload offset {} needs {} bytes, {} "
                      "remain",
                      file_, what, off_, k, n_ - off_);
      return false;
    }
    return true;
  }
  const uint8_t* p_;
  size_t n_;
  size_t off_ = 0;
  const std::string& file_;
  Status st_;
};

}  // namespace

namespace detail {
void setCheckpointTestHook(CheckpointHook h) { gHook.store(h); }
}  // namespace detail

std::vector<NamedTensor> asNamedTensors(const std::vector<TensorSlot>& slots) {
  std::vector<NamedTensor> out;
  out.reserve(slots.size());
  for (const TensorSlot& s : slots) out.push_back({s.name, s.data, s.count});
  return out;
}

const StoredTensor* Checkpoint::find(std::string_view name) const {
  for (const StoredTensor& t : tensors) {
    if (t.name == name) return &t;
  }
  return nullptr;
}

Status saveCheckpoint(const std::string& path, const CheckpointMeta& meta,
                      const std::vector<NamedTensor>& tensors) {
  std::set<std::string_view> seen;
  for (const NamedTensor& t : tensors) {
    if (t.name.empty()) {
      return makeError(collInvalidArgument, "saveCheckpoint '{}': a tensor has an empty name", path);
    }
    if (!seen.insert(t.name).second) {
      return makeError(collInvalidArgument, "saveCheckpoint '{}': tensor name '{}' appears twice",
                       path, t.name);
    }
    if (t.count > 0 && t.data == nullptr) {
      return makeError(collInvalidArgument, "saveCheckpoint '{}': tensor '{}' has {} floats at NULL",
                       path, t.name, t.count);
    }
  }
  if (tensors.size() > UINT32_MAX) {
    return makeError(collInvalidArgument, "saveCheckpoint '{}': {} tensors", path, tensors.size());
  }

  const std::string tmp = fmt::format("{}.tmp.{}", path, ::getpid());
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd < 0 && errno == EEXIST) {
    // Left by an earlier writer that had our pid (and was killed).
    if (::unlink(tmp.c_str()) == 0) fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  }
  if (fd < 0) {
    return makeError(collSystemError, "saveCheckpoint: cannot create '{}': {}", tmp,
                     std::strerror(errno));
  }
  auto fail = [&](Status st) {
    if (fd >= 0) ::close(fd);
    ::unlink(tmp.c_str());
    return st;
  };
  hook("tmp-opened");

  uint8_t header[kCheckpointHeaderBytes] = {};
  if (Status st = writeAll(fd, header, sizeof header, tmp); !st.isOk()) return fail(st);

  PayloadWriter w(fd, tmp);
  w.pod(meta.epoch);
  w.pod(meta.step);
  w.pod(meta.seed);
  w.pod(meta.sampler.epoch);
  w.pod(meta.sampler.step);
  w.pod(meta.sampler.seed);
  w.pod(meta.sampler.datasetSize);
  w.pod(meta.sampler.globalBatch);
  w.pod(static_cast<uint8_t>(meta.sampler.shuffle ? 1 : 0));
  w.pod(static_cast<uint8_t>(meta.sampler.dropLast ? 1 : 0));
  w.str(meta.modelKind);
  w.pod(static_cast<uint32_t>(meta.extra.size()));
  for (const auto& [k, v] : meta.extra) {
    w.str(k);
    w.str(v);
  }
  w.pod(static_cast<uint32_t>(tensors.size()));
  for (const NamedTensor& t : tensors) {
    w.str(t.name);
    w.pod(static_cast<uint64_t>(t.count));
    w.put(t.data, t.count * sizeof(float));
  }
  w.flush();
  if (!w.status().isOk()) return fail(w.status());
  hook("payload-written");

  std::memcpy(header, kCheckpointMagic, 8);
  putLe32(header + 8, kCheckpointVersion);
  putLe32(header + 12, static_cast<uint32_t>(kCheckpointHeaderBytes));
  putLe64(header + 16, w.bytes());
  putLe32(header + 24, w.crc());
  putLe32(header + 28, 0);
  if (::pwrite(fd, header, sizeof header, 0) != static_cast<ssize_t>(sizeof header)) {
    return fail(makeError(collSystemError, "cannot write the header of '{}': {}", tmp,
                          std::strerror(errno)));
  }
  if (::fsync(fd) != 0) {
    return fail(makeError(collSystemError, "fsync '{}': {}", tmp, std::strerror(errno)));
  }
  const int closeRc = ::close(fd);
  fd = -1;
  if (closeRc != 0) {
    return fail(makeError(collSystemError, "close '{}': {}", tmp, std::strerror(errno)));
  }
  hook("synced");

  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    return fail(makeError(collSystemError, "saveCheckpoint: cannot rename '{}' to '{}': {}", tmp,
                          path, std::strerror(errno)));
  }
  hook("renamed");

  // Make the rename itself durable.
  const std::string dir = dirOf(path);
  const int dfd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd < 0) {
    return makeError(collSystemError,
                     "checkpoint '{}' was written, but its directory '{}' cannot be opened to "
                     "fsync it: {}",
                     path, dir, std::strerror(errno));
  }
  const int syncRc = ::fsync(dfd);
  const int syncErr = errno;
  ::close(dfd);
  if (syncRc != 0 && syncErr != EINVAL) {  // EINVAL: file systems without directory fsync
    return makeError(collSystemError,
                     "checkpoint '{}' was written, but fsync of its directory '{}' failed: {}",
                     path, dir, std::strerror(syncErr));
  }
  return Status::ok();
}

Result<Checkpoint> loadCheckpoint(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    const int e = errno;
    if (e == ENOENT) {
      return makeError(collInvalidArgument, "checkpoint '{}' not found", path);
    }
    return makeError(collSystemError, "cannot open checkpoint '{}': {}", path, std::strerror(e));
  }
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    return makeError(collInvalidArgument, "checkpoint '{}' is not a regular file", path);
  }
  std::vector<uint8_t> bytes(static_cast<size_t>(st.st_size));
  size_t got = 0;
  while (got < bytes.size()) {
    ssize_t r = ::read(fd, bytes.data() + got, bytes.size() - got);
    if (r < 0 && errno == EINTR) continue;
    if (r < 0) {
      const int e = errno;
      ::close(fd);
      return makeError(collSystemError, "cannot read checkpoint '{}': {}", path, std::strerror(e));
    }
    if (r == 0) break;
    got += static_cast<size_t>(r);
  }
  ::close(fd);
  bytes.resize(got);

  if (bytes.size() >= 8 && std::memcmp(bytes.data(), kCheckpointMagic, 8) != 0) {
    return makeError(collInvalidArgument,
                     "'{}' is not a libcoll checkpoint (magic is not \"COLLCKPT\")", path);
  }
  if (bytes.size() < kCheckpointHeaderBytes) {
    return makeError(collInvalidArgument,
                     "checkpoint '{}' is truncated: {} bytes, the header alone is {} bytes", path,
                     bytes.size(), kCheckpointHeaderBytes);
  }
  uint32_t version = 0, headerBytes = 0, crcStored = 0;
  uint64_t payloadBytes = 0;
  std::memcpy(&version, bytes.data() + 8, 4);
  std::memcpy(&headerBytes, bytes.data() + 12, 4);
  std::memcpy(&payloadBytes, bytes.data() + 16, 8);
  std::memcpy(&crcStored, bytes.data() + 24, 4);
  if (version != kCheckpointVersion) {
    return makeError(collInvalidArgument,
                     "checkpoint '{}' has format version {}; this build reads version {}", path,
                     version, kCheckpointVersion);
  }
  if (headerBytes != kCheckpointHeaderBytes) {
    return makeError(collInvalidArgument,
                     "checkpoint '{}' is corrupt: header size {} (version {} has {})", path,
                     headerBytes, version, kCheckpointHeaderBytes);
  }
  const uint64_t have = bytes.size() - kCheckpointHeaderBytes;
  if (have < payloadBytes) {
    return makeError(collInvalidArgument,
                     "checkpoint '{}' is truncated: expected {} bytes ({} of payload), the file "
                     "has {}",
                     path, payloadBytes + kCheckpointHeaderBytes, payloadBytes, bytes.size());
  }
  if (have > payloadBytes) {
    return makeError(collInvalidArgument,
                     "checkpoint '{}' is corrupt: expected {} bytes, the file has {} ({} extra)",
                     path, payloadBytes + kCheckpointHeaderBytes, bytes.size(), have - payloadBytes);
  }
  const uint8_t* payload = bytes.data() + kCheckpointHeaderBytes;
  const uint32_t crc = crcUpdate(static_cast<uint32_t>(crc32_z(0, nullptr, 0)), payload,
                                 static_cast<size_t>(payloadBytes));
  if (crc != crcStored) {
    return makeError(collInvalidArgument,
                     "checkpoint '{}' is corrupt: CRC-32 of the payload is 0x{:08x}, the header "
                     "says 0x{:08x}",
                     path, crc, crcStored);
  }

  Checkpoint ck;
  ck.version = version;
  PayloadReader r(payload, static_cast<size_t>(payloadBytes), path);
  CheckpointMeta& m = ck.meta;
  uint8_t shuffle = 0, dropLast = 0;
  uint32_t nkv = 0, nt = 0;
  bool ok = r.pod(&m.epoch, "epoch") && r.pod(&m.step, "step") && r.pod(&m.seed, "seed") &&
            r.pod(&m.sampler.epoch, "sampler epoch") && r.pod(&m.sampler.step, "sampler step") &&
            r.pod(&m.sampler.seed, "sampler seed") &&
            r.pod(&m.sampler.datasetSize, "sampler dataset size") &&
            r.pod(&m.sampler.globalBatch, "sampler global batch") &&
            r.pod(&shuffle, "sampler shuffle") && r.pod(&dropLast, "sampler dropLast") &&
            r.str(&m.modelKind, "model kind") && r.pod(&nkv, "metadata count");
  m.sampler.shuffle = shuffle != 0;
  m.sampler.dropLast = dropLast != 0;
  for (uint32_t i = 0; ok && i < nkv; ++i) {
    std::string k, v;
    ok = r.str(&k, "metadata key") && r.str(&v, "metadata value");
    if (ok) m.extra[std::move(k)] = std::move(v);
  }
  ok = ok && r.pod(&nt, "tensor count");
  for (uint32_t i = 0; ok && i < nt; ++i) {
    StoredTensor t;
    uint64_t count = 0;
    ok = r.str(&t.name, "tensor name") && r.pod(&count, "tensor size") &&
         r.floats(&t.data, count, t.name);
    if (ok) ck.tensors.push_back(std::move(t));
  }
  if (!ok) return r.status();
  if (r.remaining() != 0) {
    return makeError(collInvalidArgument,
                     "checkpoint '{}' is malformed: {} unread payload bytes after the last tensor",
                     path, r.remaining());
  }
  return ck;
}

Status restoreInto(const Checkpoint& ckpt, const std::vector<TensorSlot>& slots) {
  std::unordered_map<std::string_view, const StoredTensor*> byName;
  for (const StoredTensor& t : ckpt.tensors) byName.emplace(t.name, &t);
  std::set<std::string_view> used;
  for (const TensorSlot& s : slots) {
    auto it = byName.find(s.name);
    if (it == byName.end()) {
      return makeError(collInvalidArgument,
                       "restore: tensor '{}' ({} floats) is not in the checkpoint (it has {} "
                       "tensors, model kind '{}')",
                       s.name, s.count, ckpt.tensors.size(), ckpt.meta.modelKind);
    }
    if (it->second->data.size() != s.count) {
      return makeError(collInvalidArgument,
                       "restore: tensor '{}' has {} floats in the checkpoint but {} in the model",
                       s.name, it->second->data.size(), s.count);
    }
    if (!used.insert(s.name).second) {
      return makeError(collInvalidArgument, "restore: tensor '{}' is listed twice", s.name);
    }
    if (s.count > 0 && s.data == nullptr) {
      return makeError(collInvalidArgument, "restore: tensor '{}' has NULL storage", s.name);
    }
  }
  for (const StoredTensor& t : ckpt.tensors) {
    if (used.count(t.name) == 0) {
      return makeError(collInvalidArgument,
                       "restore: checkpoint tensor '{}' ({} floats) has no counterpart in the model",
                       t.name, t.data.size());
    }
  }
  for (const TensorSlot& s : slots) {
    const StoredTensor* t = byName.at(s.name);
    if (s.count > 0) std::memcpy(s.data, t->data.data(), s.count * sizeof(float));
  }
  return Status::ok();
}

}  // namespace coll::train
