// socket_conn.h — the FIFOs of the socket transport.
//
// A FIFO (one channel, one direction, one peer) has nslots local slot
// buffers and nstreams TCP connections: message k travels on stream
// k % nstreams, so several messages are on the wire at once, and each
// stream stays in order.  The sender frames a slot as FrameHeader + bytes
// and frees the slot once the kernel took all of it; the receiver reads
// the header, then the payload straight into the slot the message belongs
// to.  Nothing is allocated per message.
//
// Progress is driven by the caller's polling (tryAcquire/tryPeek and the
// transport's progressSends): no thread of our own, so a small message
// costs one send and one recv system call on each side plus the header read.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "coll/transport.h"
#include "socket_wire.h"

namespace coll::sock {

class SocketSendConn;

// Every send FIFO of the transport: a receiver that waits pushes all of them,
// or two ranks each waiting on the other's half-sent frame would hang.
struct SendSet {
  std::vector<SocketSendConn*> conns;
  void progressAll();
};

// What the FIFOs of one peer share: whether its connections broke.
struct PeerLink {
  int rank = -1;
  bool broken = false;       // EOF / reset / protocol error on any of its sockets
  std::string brokenReason;  // for the log and the error message
  void markBroken(const std::string& why);
};

// Slots laid out with an 8-byte frame header just before each slot's data,
// so a whole frame leaves in one send().
class SlotRing {
 public:
  SlotRing(int nslots, size_t slotBytes);
  ~SlotRing();
  SlotRing(const SlotRing&) = delete;
  SlotRing& operator=(const SlotRing&) = delete;
  char* data(uint64_t k) const { return base_ + (k % nslots_) * stride_ + kPrefix; }
  FrameHeader* header(uint64_t k) const { return reinterpret_cast<FrameHeader*>(data(k) - sizeof(FrameHeader)); }
  int nslots() const { return nslots_; }
  size_t slotBytes() const { return slotBytes_; }
  // Bytes a frame of `bytes` takes on the wire.  Small frames are padded to
  // minFrame(), so a receiver can always ask for that much at once and get
  // a small message whole in one recv (its header says nothing about the
  // size of the next frame, so it may not read further blindly).
  size_t wireBytes(size_t bytes) const { return std::max(sizeof(FrameHeader) + bytes, minFrame_); }
  size_t minFrame() const { return minFrame_; }

 private:
  static constexpr size_t kPrefix = 64;  // keeps every slot's data 64-byte aligned
  int nslots_;
  size_t slotBytes_;
  size_t stride_;
  size_t minFrame_;
  char* base_;
};

class SocketSendConn final : public transport::SendConn {
 public:
  SocketSendConn(std::vector<int> fds, int nslots, size_t slotBytes, PeerLink* peer, SendSet* all);
  void* tryAcquire() override;
  void post(size_t bytes) override;
  size_t slotBytes() const override { return ring_.slotBytes(); }
  bool sendsExternal() const override { return true; }
  void postExternal(size_t headerBytes, const void* data, size_t dataBytes) override;
  // Copies the external payloads of frames not yet sent into their slots.
  void settle();

  // Pushes posted frames into the sockets as far as they take them.
  void progress();
  bool hasPending() const { return freed_ < posted_; }
  bool peerBroken() const { return peer_->broken; }
  // Streams with bytes waiting for room in the socket (poll for POLLOUT).
  void pendingFds(std::vector<int>& out) const;
  const std::vector<int>& fds() const { return fds_; }

 private:
  std::vector<int> fds_;
  SlotRing ring_;
  PeerLink* peer_;
  SendSet* all_;
  uint64_t posted_ = 0;
  uint64_t freed_ = 0;
  std::vector<uint64_t> next_;   // per stream: the next message it sends
  std::vector<size_t> sentOf_;   // per slot: frame bytes already sent
  // Per slot: where the payload of an external frame lives (nullptr: in the
  // slot) and the bytes of the frame before it (frame + message headers).
  struct External {
    const char* data = nullptr;
    size_t headBytes = 0;
  };
  std::vector<External> ext_;
  ssize_t sendFrame(int fd, uint64_t k, size_t sent, size_t total);
};

class SocketRecvConn final : public transport::RecvConn {
 public:
  SocketRecvConn(std::vector<int> fds, int nslots, size_t slotBytes, PeerLink* peer, SendSet* sends);
  const void* tryPeek(size_t* bytes) override;
  void release() override;

  // Reads arrived frames into free slots; true when one became complete.
  bool progress();
  // Streams whose next frame has a free slot to land in (poll for POLLIN).
  void readableFds(std::vector<int>& out) const;
  const std::vector<int>& fds() const { return fds_; }

 private:
  std::vector<int> fds_;
  SlotRing ring_;
  PeerLink* peer_;
  SendSet* sends_;
  uint64_t released_ = 0;
  std::vector<uint64_t> next_;    // per stream: the next message it carries
  std::vector<size_t> gotOf_;     // per slot: frame bytes received
  std::vector<uint8_t> doneOf_;   // per slot: complete
};

}  // namespace coll::sock
