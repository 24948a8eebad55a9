// ib_conn.h — one (peer, channel) connection over RC queue pairs, both
// directions, with the receiver-driven protocol of NCCL's net_ib:
//
//   receive ring  nslots slots in our memory the peer RDMA-writes into;
//   clear-to-send the receiver grants a slot by writing a CtsEntry
//                 (address, rkey, size, sequence) into the sender's CTS
//                 ring (an inline RDMA write); the sender's slots are its
//                 credits.  The first nslots grants are the ring itself,
//                 exchanged through the bootstrap (the sender fills them in).
//   data          the sender copies the message into a registered staging
//                 slot and RDMA-writes it into the granted slot WITH_IMM;
//                 the immediate (sequence mod 256, bytes) completes a
//                 receive the receiver posted for it.  Writes land before
//                 their own immediate's completion: the one order RC gives.
//
// Slot s of either side travels on lane s % lanes (COLL_IB_QPS_PER_CONNECTION
// QPs).  Data writes are signaled (their staging slot is reused after the
// completion); grants are signaled only as often as the send queue needs.
// A grant is checked before any write (expected sequence, inside the
// peer's advertised ring, the advertised rkey, room for the message); an
// immediate is checked before its slot is read.
#pragma once

#include <string>
#include <vector>

#include "coll/transport.h"
#include "ib/ib_lane.h"
#include "ib/ib_reg_cache.h"
#include "ib/ib_wire.h"

namespace coll::ib {

// Where one connection's memory is, ours and the peer's.
struct ConnMemory {
  char* ring = nullptr;       // our receive ring (peer writes)
  uint32_t ringRkey = 0;      // ...its rkey on this channel's NIC (what our grants name)
  CtsEntry* cts = nullptr;    // our CTS ring (peer writes grants for our sends)
  char* staging = nullptr;    // our send staging slots
  uint32_t stagingLkey = 0;
  uint64_t peerRing = 0;      // the peer's receive ring for our sends
  uint32_t peerRingRkey = 0;
  uint64_t peerCts = 0;       // the peer's CTS ring for its sends to us
  uint32_t peerCtsRkey = 0;
};

// Why a connection stopped: its peer went away (not an error by itself:
// the executor decides), or it failed (an error for the call).
enum class ConnFault { None, PeerGone, Failed };

class IbConnection final {
 public:
  IbConnection(const VerbsApi* api, int peer, int channel, std::string nicLabel, int nic, int nslots,
               size_t slotBytes, std::vector<Lane*> lanes, ConnMemory mem, IbCounters* counters,
               const RegCache* regs);
  // Posts the receives for the first nslots messages and fills our CTS
  // ring with the peer's ring (its first grants).  Before the QPs are RTR
  // is fine for receives; grants are local.
  Status start();

  void* tryAcquire();
  void post(size_t bytes);
  // The acquired slot's first headerBytes, then dataBytes read from `data`:
  // straight from it where it is registered (RegCache), else copied into
  // the slot first.
  void postExternal(size_t headerBytes, const void* data, size_t dataBytes);
  bool sendsExternal() const { return regs_->any(); }
  // Waits, bounded, until no write still reads the caller's memory.
  void settle();
  const void* tryPeek(size_t* bytes);
  void release();
  // Polls every lane's completions; idempotent, cheap when nothing came.
  bool progress();
  bool sendsInFlight() const { return dataInFlight_ > 0 && fault_ == ConnFault::None; }
  ConnFault fault() const { return fault_; }
  const std::string& faultText() const { return faultText_; }
  int peer() const { return peer_; }

  // Test hook (COLL_IB_FAULT): corrupts what this side puts on the wire.
  enum class Inject { None, WriteRkey, GrantRkey, GrantAddr };
  void inject(Inject i) { inject_ = i; }

 private:
  Lane& laneOf(uint64_t seq) { return *lanes_[seq % lanes_.size()]; }
  void fail(ConnFault f, std::string why);
  void retire(size_t slot);  // its data write completed (or failed)
  void onCompletion(const ibv_wc& wc);
  void grant(uint64_t seq);  // clears the sender to write message `seq` into its slot
  void flushGrants();
  void postWrite(size_t bytes, const ibv_sge* sges, int nsge, bool external);

  const VerbsApi* api_;
  int peer_, channel_;
  std::string nic_;
  int nicIndex_;
  int nslots_;
  size_t slotBytes_;
  std::vector<Lane*> lanes_;
  ConnMemory mem_;
  IbCounters* counters_;
  const RegCache* regs_;
  Inject inject_ = Inject::None;

  // send side
  uint64_t sent_ = 0;               // messages posted
  bool acquired_ = false;
  CtsEntry granted_{};              // the acquired slot's grant, as checked
  std::vector<uint8_t> busy_;       // staging slot written, completion not yet polled
  int dataInFlight_ = 0;
  std::vector<uint8_t> external_;   // that write reads the caller's memory
  int externalInFlight_ = 0;
  // receive side
  uint64_t consumed_ = 0;           // messages released
  std::vector<uint32_t> arrived_;   // bytes + 1 of an arrived message, 0: not yet
  std::vector<uint64_t> pendingGrants_;  // grants the send queue had no room for
  CtsEntry grantScratch_{};

  ConnFault fault_ = ConnFault::None;
  std::string faultText_;
};

class IbSendConn final : public transport::SendConn {
 public:
  explicit IbSendConn(IbConnection* c, size_t slotBytes) : c_(c), slotBytes_(slotBytes) {}
  void* tryAcquire() override { return c_->tryAcquire(); }
  void post(size_t bytes) override { c_->post(bytes); }
  size_t slotBytes() const override { return slotBytes_; }
  bool sendsExternal() const override { return c_->sendsExternal(); }
  void postExternal(size_t headerBytes, const void* data, size_t dataBytes) override {
    c_->postExternal(headerBytes, data, dataBytes);
  }

 private:
  IbConnection* c_;
  size_t slotBytes_;
};

class IbRecvConn final : public transport::RecvConn {
 public:
  explicit IbRecvConn(IbConnection* c) : c_(c) {}
  const void* tryPeek(size_t* bytes) override { return c_->tryPeek(bytes); }
  void release() override { c_->release(); }

 private:
  IbConnection* c_;
};

}  // namespace coll::ib
