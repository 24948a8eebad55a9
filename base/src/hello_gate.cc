#include "coll/base/hello_gate.h"

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

namespace coll::net {

HelloGate::HelloGate(const Socket& listener, size_t helloBytes, int64_t helloMs, size_t maxPending)
    : listener_(listener), helloBytes_(helloBytes), helloMs_(helloMs), maxPending_(std::max<size_t>(maxPending, 1)) {}

void HelloGate::drop(size_t i, const std::string& why) {
  dropped_.push_back(why);
  pending_.erase(pending_.begin() + static_cast<long>(i));
}

std::vector<std::string> HelloGate::takeDropped() {
  std::vector<std::string> out;
  out.swap(dropped_);
  return out;
}

Result<HelloGate::Arrival> HelloGate::next(const Deadline& deadline) {
  for (;;) {
    const int64_t now = nowNs();
    for (size_t i = pending_.size(); i-- > 0;)
      if (now >= pending_[i].deadlineNs)
        drop(i, fmt::format("no complete hello within {} ms ({} of {} bytes)", helloMs_, pending_[i].got, helloBytes_));
    int64_t waitMs = deadline.remainingMs();
    if (waitMs <= 0) return makeError(collTimeout, "no complete hello within {} ms", deadline.timeoutMs());
    for (const Pending& p : pending_) waitMs = std::min<int64_t>(waitMs, (p.deadlineNs - now) / 1'000'000 + 1);
    std::vector<pollfd> fds;
    fds.push_back({listener_.fd(), POLLIN, 0});
    for (const Pending& p : pending_) fds.push_back({p.socket.fd(), POLLIN, 0});
    int rc = ::poll(fds.data(), fds.size(), static_cast<int>(std::min<int64_t>(waitMs, 1000)));
    if (rc < 0 && errno != EINTR) return makeError(collSystemError, "poll failed: {}", strerror(errno));
    if (rc <= 0) continue;
    // Pending connections first (their index is fds index - 1), then new ones.
    for (size_t i = pending_.size(); i-- > 0;) {
      if ((fds[i + 1].revents & (POLLIN | POLLHUP | POLLERR)) == 0) continue;
      Pending& p = pending_[i];
      ssize_t n = ::recv(p.socket.fd(), p.buf.data() + p.got, helloBytes_ - p.got, MSG_DONTWAIT);
      if (n == 0) {
        drop(i, fmt::format("connection closed after {} of {} hello bytes", p.got, helloBytes_));
        continue;
      }
      if (n < 0) {
        if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)
          drop(i, fmt::format("recv failed: {}", strerror(errno)));
        continue;
      }
      p.got += static_cast<size_t>(n);
      if (p.got == helloBytes_) {
        Arrival a{std::move(p.socket), std::move(p.buf)};
        pending_.erase(pending_.begin() + static_cast<long>(i));
        return a;
      }
    }
    if (fds[0].revents & POLLIN) {
      int fd = ::accept4(listener_.fd(), nullptr, nullptr, SOCK_CLOEXEC);
      if (fd >= 0) {
        int one = 1;
        setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
        if (pending_.size() >= maxPending_) drop(0, "too many connections waiting to say hello");
        pending_.push_back(Pending{Socket(fd), std::vector<char>(helloBytes_), 0, nowNs() + helloMs_ * 1'000'000});
      }
    }
  }
}

}  // namespace coll::net
