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

Result<std::unique_ptr<Bootstrap>> Bootstrap::connect(const IdContents& id, int rank, int nranks, int64_t timeoutMs,
                                                      const std::string& rootFrom) {
  std::unique_ptr<Bootstrap> b(new Bootstrap());
  b->rank_ = rank;
  b->nranks_ = nranks;
  b->timeoutMs_ = timeoutMs;
  b->secret_ = id.secret;
  Deadline deadline = Deadline::afterMs(timeoutMs);
  auto sock = net::Socket::connectTo(id.root, deadline);
  if (!sock.isOk()) {
    std::string hint;
    if (net::isLoopback(id.root))
      hint = rootFrom.empty() ? " (a loopback address: a rank on another host cannot reach it; on the rank that makes "
                                "the id, set COLL_SOCKET_IFNAME to the interface the hosts share, or COLL_ROOT_ADDR)"
                              : fmt::format(" (a loopback address, from {}: a rank on another host cannot reach it; "
                                            "set it to rank 0's address on the network the hosts share)",
                                            rootFrom);
    else if (!rootFrom.empty())
      hint = fmt::format(" (the address from {}: is rank 0 running, and is this its address and port?)", rootFrom);
    return makeError(sock.status().code(), "rank {}: bootstrap root {} unreachable: {}{}", rank, id.root.toString(),
                     sock.status().message(), hint);
  }
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
  Status sent = sock_.sendAll(&f, sizeof(f), deadline);
  if (sent.isOk()) sent = sock_.sendAll(mine, bytes, deadline);
  if (!sent.isOk()) {
    // The root may have refused this job and said why before it closed.
    std::vector<char> said;
    bool rootSaid = false;
    Status why = readReply(Deadline::afterMs(1000), said, &rootSaid);
    if (rootSaid && !why.isOk()) return why;
    return makeError(sent.code(), "rank {}: lost the bootstrap root: {}", rank_, sent.message());
  }
  std::vector<char> data;
  bool rootSaid = false;
  COLL_CHECK(readReply(deadline, data, &rootSaid));
  if (data.size() != bytes * nranks_)
    return makeError(collRemoteError, "bootstrap root sent {} bytes, expected {}", data.size(), bytes * nranks_);
  out = std::move(data);
  return Status::ok();
}

// The root's answer to a round: the gathered bytes, or the error it sent
// (with the root's code; *rootSaid = true), or why none came.
Status Bootstrap::readReply(const Deadline& deadline, std::vector<char>& data, bool* rootSaid) {
  Reply rep{};
  Status s = sock_.recvAll(&rep, sizeof(rep), deadline);
  if (!s.isOk()) {
    if (s.code() == collTimeout)
      return makeError(collTimeout, "rank {}: init timed out after {} ms waiting for the other ranks (COLL_TIMEOUT)",
                       rank_, timeoutMs_);
    return makeError(s.code(), "rank {}: lost the bootstrap root: {}", rank_, s.message());
  }
  if (rep.len > kMaxFrame) return makeError(collRemoteError, "bootstrap root sent an oversized reply");
  data.resize(rep.len);
  COLL_CHECK(sock_.recvAll(data.data(), data.size(), deadline));
  *rootSaid = true;
  if (rep.status != collSuccess)
    return Status(static_cast<collResult_t>(rep.status), std::string(data.begin(), data.end()));
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
  awaitRootInProcess(secret_, Deadline::afterMs(timeoutMs_));
}

}  // namespace coll::boot
