#include "io_util.h"

#include <cerrno>
#include <csignal>
#include <cstring>
#include <ctime>
#include <fcntl.h>
#include <poll.h>
#include <unistd.h>

namespace collrun {

bool write_all(int fd, const char* data, size_t n) {
  while (n > 0) {
    ssize_t w = ::write(fd, data, n);
    if (w < 0) {
      if (errno == EINTR) continue;
      if (errno == EAGAIN || errno == EWOULDBLOCK) {
        // An inherited non-blocking fd: wait until it takes more.
        pollfd p{fd, POLLOUT, 0};
        if (poll(&p, 1, -1) < 0 && errno != EINTR) return false;
        continue;
      }
      return false;
    }
    data += w;
    n -= static_cast<size_t>(w);
  }
  return true;
}

ssize_t read_retry(int fd, void* buf, size_t n) {
  for (;;) {
    ssize_t r = ::read(fd, buf, n);
    if (r < 0 && errno == EINTR) continue;
    return r;
  }
}

void close_fd(int& fd) {
  if (fd >= 0) {
    // On Linux the descriptor is released even when close reports EINTR, so
    // it must not be retried.
    ::close(fd);
    fd = -1;
  }
}

int64_t now_ms() {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1000 + ts.tv_nsec / 1000000;
}

std::string signal_name(int sig) {
  const char* abbrev = sigabbrev_np(sig);
  if (abbrev != nullptr) return std::string("SIG") + abbrev;
  if (sig >= SIGRTMIN && sig <= SIGRTMAX)
    return "SIGRTMIN+" + std::to_string(sig - SIGRTMIN);
  return "SIG" + std::to_string(sig);
}

void report(const std::string& msg) {
  std::string line = "collrun: " + msg + "\n";
  write_all(STDERR_FILENO, line);
}

void ensure_std_fds_open() {
  for (int fd = 0; fd <= 2; ++fd) {
    if (fcntl(fd, F_GETFD) >= 0 || errno != EBADF) continue;
    int nfd = ::open("/dev/null", fd == 0 ? O_RDONLY : O_WRONLY);
    if (nfd >= 0 && nfd != fd) {
      dup2(nfd, fd);
      ::close(nfd);
    }
  }
}

}  // namespace collrun
