#include "remote_copy.h"

#include <algorithm>
#include <cerrno>

namespace coll::verbs_emu {
namespace {

constexpr size_t kPiece = 64 * 1024;

// The part [off, off + n) of the byte stream the iovecs describe.
std::vector<iovec> slice(const std::vector<iovec>& v, size_t off, size_t n) {
  std::vector<iovec> out;
  for (const iovec& e : v) {
    if (n == 0) break;
    if (off >= e.iov_len) {
      off -= e.iov_len;
      continue;
    }
    const size_t take = std::min(e.iov_len - off, n);
    out.push_back({static_cast<char*>(e.iov_base) + off, take});
    n -= take;
    off = 0;
  }
  return out;
}

// One call may write less than asked (it stops at an unmapped page):
// continue after the written part, fail when nothing more goes.
int writeAll(pid_t pid, const std::vector<iovec>& local, const std::vector<iovec>& remote, size_t len) {
  size_t done = 0;
  while (done < len) {
    std::vector<iovec> l = slice(local, done, len - done);
    std::vector<iovec> r = slice(remote, done, len - done);
    const ssize_t n = process_vm_writev(pid, l.data(), l.size(), r.data(), r.size(), 0);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return errno;
    if (n == 0) return EFAULT;
    done += static_cast<size_t>(n);
  }
  return 0;
}

}  // namespace

int writeRemote(pid_t pid, const std::vector<iovec>& local, uint64_t remote_addr, size_t len) {
  size_t end = len;
  while (end > 0) {
    const size_t start = end > kPiece ? end - kPiece : 0;
    std::vector<iovec> remote{{reinterpret_cast<void*>(remote_addr + start), end - start}};
    if (int err = writeAll(pid, slice(local, start, end - start), remote, end - start)) return err;
    end = start;
  }
  return 0;
}

int scatterRemote(pid_t pid, const std::vector<iovec>& local, const std::vector<iovec>& remote) {
  size_t len = 0;
  for (const iovec& e : local) len += e.iov_len;
  return writeAll(pid, local, remote, len);
}

}  // namespace coll::verbs_emu
