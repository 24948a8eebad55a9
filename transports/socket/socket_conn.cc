#include "socket_conn.h"

#include <sys/socket.h>
#include <sys/uio.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <new>

#include "coll/base/log.h"

namespace coll::sock {

namespace {
// Padding small frames to this payload costs nothing measurable and saves
// the receiver a second system call per small message.
constexpr size_t kSmallPayload = 248;
}  // namespace

void PeerLink::markBroken(const std::string& why) {
  if (broken) return;
  broken = true;
  brokenReason = why;
  COLL_LOG(Info, kNet, -1, "socket: connection to rank {} lost: {}", rank, why);
}

void SendSet::progressAll() {
  for (SocketSendConn* c : conns)
    if (c->hasPending()) c->progress();
}

SlotRing::SlotRing(int nslots, size_t slotBytes)
    : nslots_(nslots),
      slotBytes_(slotBytes),
      stride_(kPrefix + (slotBytes + 63) / 64 * 64),
      minFrame_(sizeof(FrameHeader) + std::min<size_t>(kSmallPayload, slotBytes)) {
  base_ = static_cast<char*>(std::aligned_alloc(64, stride_ * nslots));
  if (base_ == nullptr) throw std::bad_alloc();
}

SlotRing::~SlotRing() { std::free(base_); }

SocketSendConn::SocketSendConn(std::vector<int> fds, int nslots, size_t slotBytes, PeerLink* peer, SendSet* all)
    : fds_(std::move(fds)),
      ring_(nslots, slotBytes),
      peer_(peer),
      all_(all),
      next_(fds_.size()),
      sentOf_(nslots),
      ext_(nslots) {
  for (size_t s = 0; s < next_.size(); ++s) next_[s] = s;
}

void* SocketSendConn::tryAcquire() {
  if (posted_ - freed_ < static_cast<uint64_t>(ring_.nslots())) return ring_.data(posted_);
  // Full: push what we can, ours and everyone else's (see SendSet).
  all_->progressAll();
  if (posted_ - freed_ < static_cast<uint64_t>(ring_.nslots())) return ring_.data(posted_);
  return nullptr;
}

void SocketSendConn::post(size_t bytes) {
  FrameHeader* h = ring_.header(posted_);
  h->kind = kData;
  h->bytes = static_cast<uint32_t>(bytes);
  sentOf_[posted_ % ring_.nslots()] = 0;
  ext_[posted_ % ring_.nslots()] = External{};
  ++posted_;
  progress();  // small messages leave now: latency is the point
}

void SocketSendConn::postExternal(size_t headerBytes, const void* data, size_t dataBytes) {
  const uint64_t k = posted_;
  // A frame padded to minFrame() would send bytes past the payload: small
  // ones are copied, which costs nothing next to the system call.
  if (sizeof(FrameHeader) + headerBytes + dataBytes <= ring_.minFrame()) {
    memcpy(ring_.data(k) + headerBytes, data, dataBytes);
    post(headerBytes + dataBytes);
    return;
  }
  FrameHeader* h = ring_.header(k);
  h->kind = kData;
  h->bytes = static_cast<uint32_t>(headerBytes + dataBytes);
  sentOf_[k % ring_.nslots()] = 0;
  ext_[k % ring_.nslots()] = External{static_cast<const char*>(data), sizeof(FrameHeader) + headerBytes};
  ++posted_;
  progress();
}

void SocketSendConn::settle() {
  for (uint64_t k = freed_; k < posted_; ++k) {
    External& e = ext_[k % ring_.nslots()];
    if (e.data == nullptr) continue;
    const size_t payload = ring_.wireBytes(ring_.header(k)->bytes) - e.headBytes;
    memcpy(reinterpret_cast<char*>(ring_.header(k)) + e.headBytes, e.data, payload);
    e = External{};
  }
}

// Sends what is left of frame k from byte `sent` on: one buffer, or the
// slot's headers and the caller's payload in one sendmsg.
ssize_t SocketSendConn::sendFrame(int fd, uint64_t k, size_t sent, size_t total) {
  const char* frame = reinterpret_cast<const char*>(ring_.header(k));
  const External& e = ext_[k % ring_.nslots()];
  if (e.data == nullptr) return ::send(fd, frame + sent, total - sent, MSG_DONTWAIT | MSG_NOSIGNAL);
  iovec iov[2];
  size_t n = 0;
  if (sent < e.headBytes) {
    iov[n++] = {const_cast<char*>(frame + sent), e.headBytes - sent};
    iov[n++] = {const_cast<char*>(e.data), total - e.headBytes};
  } else {
    iov[n++] = {const_cast<char*>(e.data + (sent - e.headBytes)), total - sent};
  }
  msghdr m{};
  m.msg_iov = iov;
  m.msg_iovlen = n;
  return ::sendmsg(fd, &m, MSG_DONTWAIT | MSG_NOSIGNAL);
}

void SocketSendConn::progress() {
  if (peer_->broken) return;  // frames to a lost peer stay queued: it cannot read them
  const size_t ns = fds_.size();
  for (size_t s = 0; s < ns; ++s) {
    for (uint64_t k = next_[s]; k < posted_; k = next_[s]) {
      const FrameHeader* h = ring_.header(k);
      size_t total = ring_.wireBytes(h->bytes);
      size_t& sent = sentOf_[k % ring_.nslots()];
      ssize_t n = sendFrame(fds_[s], k, sent, total);
      if (n < 0) {
        if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) break;
        peer_->markBroken(fmt::format("send failed: {}", strerror(errno)));
        return;
      }
      sent += static_cast<size_t>(n);
      if (sent < total) break;
      next_[s] = k + ns;
    }
  }
  // Slots free in order: a slot is done once its stream moved past it.
  while (freed_ < posted_) {
    const FrameHeader* h = ring_.header(freed_);
    if (sentOf_[freed_ % ring_.nslots()] != ring_.wireBytes(h->bytes)) break;
    ext_[freed_ % ring_.nslots()] = External{};
    ++freed_;
  }
}

void SocketSendConn::pendingFds(std::vector<int>& out) const {
  for (size_t s = 0; s < fds_.size(); ++s)
    if (next_[s] < posted_) out.push_back(fds_[s]);
}

SocketRecvConn::SocketRecvConn(std::vector<int> fds, int nslots, size_t slotBytes, PeerLink* peer, SendSet* sends)
    : fds_(std::move(fds)),
      ring_(nslots, slotBytes),
      peer_(peer),
      sends_(sends),
      next_(fds_.size()),
      gotOf_(nslots),
      doneOf_(nslots) {
  for (size_t s = 0; s < next_.size(); ++s) next_[s] = s;
}

const void* SocketRecvConn::tryPeek(size_t* bytes) {
  int slot = static_cast<int>(released_ % ring_.nslots());
  if (!doneOf_[slot]) {
    progress();
    if (!doneOf_[slot]) {
      sends_->progressAll();
      return nullptr;
    }
  }
  *bytes = ring_.header(released_)->bytes;
  return ring_.data(released_);
}

void SocketRecvConn::release() {
  int slot = static_cast<int>(released_ % ring_.nslots());
  doneOf_[slot] = 0;
  gotOf_[slot] = 0;
  ++released_;
}

void SocketRecvConn::readableFds(std::vector<int>& out) const {
  const uint64_t limit = released_ + ring_.nslots();
  for (size_t s = 0; s < fds_.size(); ++s)
    if (next_[s] < limit) out.push_back(fds_[s]);
}

bool SocketRecvConn::progress() {
  // No early exit when the peer is known gone: what it sent before it left
  // is still in our socket and may complete the step we wait on.
  bool completed = false;
  const size_t ns = fds_.size();
  const uint64_t limit = released_ + ring_.nslots();
  for (size_t s = 0; s < ns; ++s) {
    for (uint64_t k = next_[s]; k < limit; k = next_[s]) {
      int slot = static_cast<int>(k % ring_.nslots());
      size_t& got = gotOf_[slot];
      FrameHeader* h = ring_.header(k);
      // Every frame is at least minFrame() long: ask for that much first
      // (a small message is then whole), the rest once the header said it.
      const size_t minFrame = ring_.minFrame();
      size_t want = got < minFrame ? minFrame - got : ring_.wireBytes(h->bytes) - got;
      ssize_t n = ::recv(fds_[s], reinterpret_cast<char*>(h) + got, want, MSG_DONTWAIT);
      if (n == 0) {
        peer_->markBroken("connection closed");
        return completed;
      }
      if (n < 0) {
        if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) break;
        peer_->markBroken(fmt::format("recv failed: {}", strerror(errno)));
        return completed;
      }
      const size_t before = got;
      got += static_cast<size_t>(n);
      if (before < sizeof(FrameHeader) && got >= sizeof(FrameHeader)) {
        Status ok = checkFrameHeader(*h, static_cast<uint32_t>(ring_.slotBytes()));
        if (!ok.isOk()) {
          peer_->markBroken(fmt::format("protocol error: {}", ok.message()));
          return completed;
        }
      }
      if (got < sizeof(FrameHeader) || got < ring_.wireBytes(h->bytes)) {
        if (static_cast<size_t>(n) < want) break;  // drained for now
        continue;
      }
      doneOf_[slot] = 1;
      completed = true;
      next_[s] = k + ns;
    }
  }
  return completed;
}

}  // namespace coll::sock
