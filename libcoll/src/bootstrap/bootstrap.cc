#include "bootstrap/bootstrap.h"

#include <cstring>

#include "bootstrap/protocol.h"
#include "bootstrap/root.h"

namespace coll::boot {

Result<collUniqueId> createRoot(const std::string& address, const Secret& secret, int64_t timeoutMs) {
  auto addr = net::parseAddress(address.empty() ? "127.0.0.1:0" : address);
  COLL_CHECK(addr.status());
  auto listener = net::Socket::listenOn(addr.value());
  COLL_CHECK(listener.status());
  auto bound = listener.value().localAddress();
  COLL_CHECK(bound.status());
  IdContents c;
  c.root = bound.value();
  c.secret = secret;
  startRoot(listener.take(), secret, timeoutMs);
  return encodeId(c);
}

Result<std::unique_ptr<Bootstrap>> Bootstrap::connect(const IdContents& id, int rank, int nranks, int64_t timeoutMs) {
  std::unique_ptr<Bootstrap> b(new Bootstrap());
  b->rank_ = rank;
  b->nranks_ = nranks;
  b->timeoutMs_ = timeoutMs;
  Deadline deadline = Deadline::afterMs(timeoutMs);
  auto sock = net::Socket::connectTo(id.root, deadline);
  if (!sock.isOk())
    return makeError(sock.status().code(), "rank {}: bootstrap root unreachable: {}{}", rank, sock.status().message(),
                     net::isLoopback(id.root)
                         ? " (a loopback address: a rank on another host cannot reach it; on the rank that makes the "
                           "id, set COLL_SOCKET_IFNAME to the interface the hosts share, or COLL_ROOT_ADDR)"
                         : "");
  b->sock_ = sock.take();
  Hello h{};
  memcpy(h.secret, id.secret.data(), kSecretBytes);
  h.magic = kHelloMagic;
  h.version = kProtocolVersion;
  h.rank = rank;
  h.nranks = nranks;
  COLL_CHECK(b->sock_.sendAll(&h, sizeof(h), deadline));
  return b;
}

Bootstrap::~Bootstrap() { finish(); }

Status Bootstrap::allGather(const void* mine, size_t bytes, std::vector<char>& out) {
  if (!sock_.valid()) return makeError(collInternalError, "bootstrap used after finish");
  if (bytes > kMaxFrame / static_cast<size_t>(nranks_))
    return makeError(collInternalError, "bootstrap frame of {} bytes is too large", bytes);
  Deadline deadline = Deadline::afterMs(timeoutMs_);
  Frame f{static_cast<uint32_t>(bytes)};
  COLL_CHECK(sock_.sendAll(&f, sizeof(f), deadline));
  COLL_CHECK(sock_.sendAll(mine, bytes, deadline));
  Reply rep{};
  Status s = sock_.recvAll(&rep, sizeof(rep), deadline);
  if (!s.isOk()) {
    if (s.code() == collTimeout)
      return makeError(collTimeout, "rank {}: init timed out after {} ms waiting for the other ranks (COLL_TIMEOUT)",
                       rank_, timeoutMs_);
    return makeError(s.code(), "rank {}: lost the bootstrap root: {}", rank_, s.message());
  }
  if (rep.len > kMaxFrame) return makeError(collRemoteError, "bootstrap root sent an oversized reply");
  std::vector<char> data(rep.len);
  COLL_CHECK(sock_.recvAll(data.data(), data.size(), deadline));
  if (rep.status != collSuccess)
    return Status(static_cast<collResult_t>(rep.status), std::string(data.begin(), data.end()));
  if (data.size() != bytes * nranks_)
    return makeError(collRemoteError, "bootstrap root sent {} bytes, expected {}", data.size(), bytes * nranks_);
  out = std::move(data);
  return Status::ok();
}

Status Bootstrap::barrier() {
  std::vector<char> ignored;
  char none = 0;
  return allGather(&none, 0, ignored);
}

void Bootstrap::finish() {
  if (!sock_.valid()) return;
  Frame f{kDoneLen};
  (void)sock_.sendAll(&f, sizeof(f), Deadline::afterMs(1000));
  sock_.close();
}

}  // namespace coll::boot
