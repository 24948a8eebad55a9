// socket.h — small TCP helpers with deadlines, used by the bootstrap.
// Every call retries EINTR and gives up at the deadline; none can hang.
#pragma once

#include <netinet/in.h>
#include <sys/socket.h>

#include <cstddef>
#include <string>

#include "coll/base/clock.h"
#include "coll/base/status.h"

namespace coll::net {

struct Address {
  sockaddr_storage storage{};
  socklen_t len = 0;
  std::string toString() const;
};

// Parses "host:port" / "[v6]:port" (numeric hosts only, or "localhost").
Result<Address> parseAddress(const std::string& text);
// 127.0.0.0/8 or ::1: reachable from this host only.
bool isLoopback(const Address& a);

class Socket {
 public:
  Socket() = default;
  explicit Socket(int fd) : fd_(fd) {}
  ~Socket() { close(); }
  Socket(Socket&& o) noexcept : fd_(o.fd_) { o.fd_ = -1; }
  Socket& operator=(Socket&& o) noexcept;
  Socket(const Socket&) = delete;
  Socket& operator=(const Socket&) = delete;

  int fd() const { return fd_; }
  bool valid() const { return fd_ >= 0; }
  void close();

  // Listening socket bound to addr (port 0 picks one; SO_REUSEADDR set).
  // bufferBytes > 0 sets SO_SNDBUF/SO_RCVBUF, inherited by accepted sockets
  // (set before the handshake, so TCP's window scaling can use it).
  static Result<Socket> listenOn(const Address& addr, size_t bufferBytes = 0);
  // Connects, retrying refused/unreachable until the deadline.
  static Result<Socket> connectTo(const Address& addr, const Deadline& deadline, size_t bufferBytes = 0);
  Result<Socket> accept(const Deadline& deadline) const;
  Result<Address> localAddress() const;

  Status sendAll(const void* data, size_t bytes, const Deadline& deadline) const;
  Status recvAll(void* data, size_t bytes, const Deadline& deadline) const;

 private:
  int fd_ = -1;
};

}  // namespace coll::net
