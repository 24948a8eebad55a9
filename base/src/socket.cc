#include "coll/base/socket.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <thread>

namespace coll::net {
namespace {

// Waits until fd is ready for `events` or the deadline passes.
Status waitFd(int fd, short events, const Deadline& deadline, const char* what) {
  for (;;) {
    int64_t ms = deadline.remainingMs();
    if (ms <= 0) return makeError(collTimeout, "{} timed out after {} ms", what, deadline.timeoutMs());
    pollfd p{fd, events, 0};
    int rc = poll(&p, 1, static_cast<int>(std::min<int64_t>(ms, 1000)));
    if (rc > 0) return Status::ok();
    if (rc < 0 && errno != EINTR) return makeError(collSystemError, "{}: poll failed: {}", what, strerror(errno));
  }
}

void setBuffers(int fd, size_t bytes) {
  if (bytes == 0) return;
  int v = static_cast<int>(bytes);
  setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &v, sizeof(v));
  setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &v, sizeof(v));
}

}  // namespace

std::string Address::toString() const {
  char host[INET6_ADDRSTRLEN] = "?";
  int port = 0;
  if (storage.ss_family == AF_INET) {
    auto* a = reinterpret_cast<const sockaddr_in*>(&storage);
    inet_ntop(AF_INET, &a->sin_addr, host, sizeof(host));
    port = ntohs(a->sin_port);
    return fmt::format("{}:{}", host, port);
  }
  if (storage.ss_family == AF_INET6) {
    auto* a = reinterpret_cast<const sockaddr_in6*>(&storage);
    inet_ntop(AF_INET6, &a->sin6_addr, host, sizeof(host));
    port = ntohs(a->sin6_port);
    return fmt::format("[{}]:{}", host, port);
  }
  return "<no address>";
}

bool isLoopback(const Address& a) {
  if (a.storage.ss_family == AF_INET)
    return (ntohl(reinterpret_cast<const sockaddr_in*>(&a.storage)->sin_addr.s_addr) >> 24) == 127;
  if (a.storage.ss_family == AF_INET6)
    return IN6_IS_ADDR_LOOPBACK(&reinterpret_cast<const sockaddr_in6*>(&a.storage)->sin6_addr);
  return false;
}

Result<Address> parseAddress(const std::string& text) {
  std::string host, port;
  if (!text.empty() && text[0] == '[') {
    auto close = text.find(']');
    if (close == std::string::npos || close + 1 >= text.size() || text[close + 1] != ':')
      return makeError(collInvalidArgument, "bad address '{}' (want [v6addr]:port)", text);
    host = text.substr(1, close - 1);
    port = text.substr(close + 2);
  } else {
    auto colon = text.rfind(':');
    if (colon == std::string::npos)
      return makeError(collInvalidArgument, "bad address '{}' (want host:port)", text);
    host = text.substr(0, colon);
    port = text.substr(colon + 1);
  }
  // Digits only: strtol alone took "+80", " 80" and "-0".  The whole text
  // must hold no NUL either (C strings below would stop at it).
  if (port.empty() || port.find_first_not_of("0123456789") != std::string::npos ||
      text.find('\0') != std::string::npos)
    return makeError(collInvalidArgument, "bad port in address '{}'", text);
  long p = strtol(port.c_str(), nullptr, 10);
  if (p > 65535) return makeError(collInvalidArgument, "bad port in address '{}'", text);
  if (host == "localhost") host = "127.0.0.1";
  Address a;
  auto* v4 = reinterpret_cast<sockaddr_in*>(&a.storage);
  auto* v6 = reinterpret_cast<sockaddr_in6*>(&a.storage);
  if (inet_pton(AF_INET, host.c_str(), &v4->sin_addr) == 1) {
    v4->sin_family = AF_INET;
    v4->sin_port = htons(static_cast<uint16_t>(p));
    a.len = sizeof(sockaddr_in);
  } else if (inet_pton(AF_INET6, host.c_str(), &v6->sin6_addr) == 1) {
    v6->sin6_family = AF_INET6;
    v6->sin6_port = htons(static_cast<uint16_t>(p));
    a.len = sizeof(sockaddr_in6);
  } else {
    return makeError(collInvalidArgument, "bad host '{}' in address '{}' (numeric IPv4/IPv6 expected)", host, text);
  }
  return a;
}

Socket& Socket::operator=(Socket&& o) noexcept {
  if (this != &o) {
    close();
    fd_ = o.fd_;
    o.fd_ = -1;
  }
  return *this;
}

void Socket::close() {
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
}

Result<Socket> Socket::listenOn(const Address& addr, size_t bufferBytes) {
  Socket s(::socket(addr.storage.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0));
  if (!s.valid()) return makeError(collSystemError, "socket() failed: {}", strerror(errno));
  int one = 1;
  setsockopt(s.fd_, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  setBuffers(s.fd_, bufferBytes);
  if (::bind(s.fd_, reinterpret_cast<const sockaddr*>(&addr.storage), addr.len) != 0)
    return makeError(collSystemError, "cannot listen on {}: bind: {}", addr.toString(), strerror(errno));
  if (::listen(s.fd_, 1024) != 0)
    return makeError(collSystemError, "listen on {} failed: {}", addr.toString(), strerror(errno));
  return s;
}

Result<Socket> Socket::connectTo(const Address& addr, const Deadline& deadline, size_t bufferBytes) {
  int delayMs = 5;
  for (;;) {
    Socket s(::socket(addr.storage.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0));
    if (!s.valid()) return makeError(collSystemError, "socket() failed: {}", strerror(errno));
    setBuffers(s.fd_, bufferBytes);
    // Nonblocking connect, so an unreachable host costs the deadline at
    // most, not the kernel's minutes of SYN retries.
    fcntl(s.fd_, F_SETFL, fcntl(s.fd_, F_GETFL) | O_NONBLOCK);
    int rc = ::connect(s.fd_, reinterpret_cast<const sockaddr*>(&addr.storage), addr.len);
    if (rc != 0 && (errno == EINPROGRESS || errno == EINTR)) {
      Status ready = waitFd(s.fd_, POLLOUT, deadline, "connect");
      if (!ready.isOk())
        return makeError(collTimeout, "could not reach {} within {} ms (connect pending)", addr.toString(),
                         deadline.timeoutMs());
      int soErr = 0;
      socklen_t len = sizeof(soErr);
      getsockopt(s.fd_, SOL_SOCKET, SO_ERROR, &soErr, &len);
      rc = soErr == 0 ? 0 : -1;
      errno = soErr;
    }
    if (rc == 0) {
      int one = 1;
      setsockopt(s.fd_, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
      return s;
    }
    int err = errno;
    if (err != ECONNREFUSED && err != ENETUNREACH && err != EHOSTUNREACH && err != ETIMEDOUT && err != EAGAIN &&
        err != ECONNRESET)
      return makeError(collSystemError, "connect to {} failed: {}", addr.toString(), strerror(err));
    if (deadline.remainingMs() <= 0)
      return makeError(collTimeout, "could not reach {} within {} ms (last error: {})", addr.toString(),
                       deadline.timeoutMs(), strerror(err));
    std::this_thread::sleep_for(std::chrono::milliseconds(std::min<int64_t>(delayMs, deadline.remainingMs())));
    delayMs = std::min(delayMs * 2, 200);
  }
}

Result<Socket> Socket::accept(const Deadline& deadline) const {
  COLL_CHECK(waitFd(fd_, POLLIN, deadline, "accept"));
  int fd;
  do {
    fd = ::accept4(fd_, nullptr, nullptr, SOCK_CLOEXEC);
  } while (fd < 0 && errno == EINTR);
  if (fd < 0) return makeError(collSystemError, "accept failed: {}", strerror(errno));
  int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
  return Socket(fd);
}

Result<Address> Socket::localAddress() const {
  Address a;
  a.len = sizeof(a.storage);
  if (getsockname(fd_, reinterpret_cast<sockaddr*>(&a.storage), &a.len) != 0)
    return makeError(collSystemError, "getsockname failed: {}", strerror(errno));
  return a;
}

Status Socket::sendAll(const void* data, size_t bytes, const Deadline& deadline) const {
  const char* p = static_cast<const char*>(data);
  while (bytes > 0) {
    ssize_t n = ::send(fd_, p, bytes, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (n > 0) {
      p += n;
      bytes -= static_cast<size_t>(n);
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      COLL_CHECK(waitFd(fd_, POLLOUT, deadline, "send"));
      continue;
    }
    return makeError(collSystemError, "send failed: {}", n < 0 ? strerror(errno) : "connection closed");
  }
  return Status::ok();
}

Status Socket::recvAll(void* data, size_t bytes, const Deadline& deadline) const {
  char* p = static_cast<char*>(data);
  while (bytes > 0) {
    ssize_t n = ::recv(fd_, p, bytes, MSG_DONTWAIT);
    if (n > 0) {
      p += n;
      bytes -= static_cast<size_t>(n);
      continue;
    }
    if (n == 0) return makeError(collRemoteError, "connection closed by peer");
    if (errno == EINTR) continue;
    if (errno == EAGAIN || errno == EWOULDBLOCK) {
      COLL_CHECK(waitFd(fd_, POLLIN, deadline, "recv"));
      continue;
    }
    return makeError(collSystemError, "recv failed: {}", strerror(errno));
  }
  return Status::ok();
}

}  // namespace coll::net
