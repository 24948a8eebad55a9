#include "ib/ib_conn.h"

#include <arpa/inet.h>

#include <atomic>
#include <cstring>

#include "coll/base/clock.h"

#include "ib/ib_qp.h"

namespace coll::ib {
namespace {

// The immediate: sequence mod 256 in the top byte, the message's bytes
// below (slots are at most 16 MiB - 1; nslots <= 128 keeps mod 256
// unambiguous).  Network byte order on the wire, as verbs define imm_data.
uint32_t packImm(uint64_t seq, size_t bytes) { return htonl(static_cast<uint32_t>(((seq & 0xff) << 24) | bytes)); }

uint64_t loadSeq(const CtsEntry& e) {
  return std::atomic_ref<const uint64_t>(e.seq).load(std::memory_order_acquire);
}

}  // namespace

IbConnection::IbConnection(const VerbsApi* api, int peer, int channel, std::string nicLabel, int nic, int nslots,
                           size_t slotBytes, std::vector<Lane*> lanes, ConnMemory mem, IbCounters* counters,
                           const RegCache* regs)
    : api_(api),
      peer_(peer),
      channel_(channel),
      nic_(std::move(nicLabel)),
      nicIndex_(nic),
      nslots_(nslots),
      slotBytes_(slotBytes),
      lanes_(std::move(lanes)),
      mem_(mem),
      counters_(counters),
      regs_(regs),
      busy_(static_cast<size_t>(nslots), 0),
      external_(static_cast<size_t>(nslots), 0),
      arrived_(static_cast<size_t>(nslots), 0) {}

Status IbConnection::start() {
  for (int s = 0; s < nslots_; ++s) {
    if (int rc = laneOf(s).postRecv(makeWrId(WrKind::Recv, s), *counters_); rc != 0)
      return makeError(collSystemError, "ib: posting a receive for rank {} on {} failed: {}", peer_, nic_,
                       std::strerror(rc));
    CtsEntry& e = mem_.cts[s];
    e.addr = mem_.peerRing + static_cast<uint64_t>(s) * slotBytes_;
    e.rkey = mem_.peerRingRkey;
    e.size = static_cast<uint32_t>(slotBytes_);
    std::atomic_ref<uint64_t>(e.seq).store(static_cast<uint64_t>(s) + 1, std::memory_order_release);
  }
  return Status::ok();
}

void IbConnection::retire(size_t slot) {
  if (!busy_[slot]) return;
  busy_[slot] = 0;
  --dataInFlight_;
  if (external_[slot]) {
    external_[slot] = 0;
    --externalInFlight_;
  }
}

void IbConnection::fail(ConnFault f, std::string why) {
  if (fault_ != ConnFault::None) return;  // the first cause stays
  fault_ = f;
  faultText_ = std::move(why);
}

void* IbConnection::tryAcquire() {
  progress();
  if (fault_ != ConnFault::None) return nullptr;
  if (acquired_) return mem_.staging + (sent_ % nslots_) * slotBytes_;
  const size_t slot = sent_ % nslots_;
  const CtsEntry& e = mem_.cts[slot];
  const uint64_t seq = loadSeq(e);
  if (seq != sent_ + 1) {
    // An older grant means none yet; a later one is the peer's protocol error.
    if (seq > sent_ + 1)
      fail(ConnFault::Failed, fmt::format("rank {} granted message {} before message {} (channel {}, {})", peer_,
                                          seq - 1, sent_, channel_, nic_));
    return nullptr;
  }
  if (busy_[slot] || !laneOf(sent_).canPost()) return nullptr;
  // Checked once and kept: the write uses this copy, whatever the peer
  // writes into its ring entry meanwhile.
  const CtsEntry g{e.addr, e.rkey, e.size, seq, 0};
  const uint64_t ringEnd = mem_.peerRing + static_cast<uint64_t>(nslots_) * slotBytes_;
  if (g.rkey != mem_.peerRingRkey || g.addr < mem_.peerRing || g.addr >= ringEnd || g.size > ringEnd - g.addr ||
      g.size < transport::kSlotHeaderBytes) {
    fail(ConnFault::Failed,
         fmt::format("rank {} granted a write outside the ring it advertised (address {:#x}, {} bytes, rkey {:#x}; "
                     "channel {}, {}): nothing was written",
                     peer_, g.addr, g.size, g.rkey, channel_, nic_));
    return nullptr;
  }
  granted_ = g;
  acquired_ = true;
  return mem_.staging + slot * slotBytes_;
}

void IbConnection::post(size_t bytes) {
  ibv_sge sge{};
  sge.addr = reinterpret_cast<uintptr_t>(mem_.staging + (sent_ % nslots_) * slotBytes_);
  sge.length = static_cast<uint32_t>(bytes);
  sge.lkey = mem_.stagingLkey;
  postWrite(bytes, &sge, 1, false);
}

void IbConnection::postExternal(size_t headerBytes, const void* data, size_t dataBytes) {
  char* slot = mem_.staging + (sent_ % nslots_) * slotBytes_;
  const std::optional<uint32_t> key = regs_->lkey(data, dataBytes, static_cast<size_t>(nicIndex_));
  if (!key || headerBytes + dataBytes > slotBytes_) {
    // Not registered memory: through the staging slot (a bounce buffer).
    memcpy(slot + headerBytes, data, std::min(dataBytes, slotBytes_ - std::min(headerBytes, slotBytes_)));
    post(headerBytes + dataBytes);
    return;
  }
  ibv_sge sge[2]{};
  sge[0].addr = reinterpret_cast<uintptr_t>(slot);
  sge[0].length = static_cast<uint32_t>(headerBytes);
  sge[0].lkey = mem_.stagingLkey;
  sge[1].addr = reinterpret_cast<uintptr_t>(data);
  sge[1].length = static_cast<uint32_t>(dataBytes);
  sge[1].lkey = *key;
  postWrite(headerBytes + dataBytes, sge, 2, true);
}

void IbConnection::postWrite(size_t bytes, const ibv_sge* sges, int nsge, bool external) {
  const size_t slot = sent_ % nslots_;
  const CtsEntry& e = granted_;
  acquired_ = false;
  if (bytes > e.size || bytes > slotBytes_) {
    fail(ConnFault::Failed, fmt::format("a message of {} bytes does not fit the {} bytes rank {} granted", bytes,
                                        e.size, peer_));
    return;
  }
  ibv_send_wr wr{};
  wr.wr_id = makeWrId(WrKind::Data, sent_);
  wr.sg_list = const_cast<ibv_sge*>(sges);
  wr.num_sge = nsge;
  wr.opcode = IBV_WR_RDMA_WRITE_WITH_IMM;
  wr.send_flags = IBV_SEND_SIGNALED;
  wr.imm_data = packImm(sent_, bytes);
  wr.wr.rdma.remote_addr = e.addr;
  wr.wr.rdma.rkey = inject_ == Inject::WriteRkey ? e.rkey ^ 0x5a5a00u : e.rkey;
  if (int rc = laneOf(sent_).postSend(wr, *counters_); rc != 0) {
    fail(ConnFault::Failed, fmt::format("posting a write to rank {} on {} failed: {}", peer_, nic_, std::strerror(rc)));
    return;
  }
  busy_[slot] = 1;
  external_[slot] = external ? 1 : 0;
  ++dataInFlight_;
  if (external) {
    ++externalInFlight_;
    ++counters_->externalWrs;
  }
  ++counters_->dataWrs;
  counters_->dataBytes += bytes;
  counters_->nicBytes[nicIndex_] += bytes;
  ++sent_;
}

void IbConnection::settle() {
  // A posted write cannot be taken back or redirected: wait until the NIC
  // has read the caller's memory (it needs no help from the peer's CPU).
  const int64_t until = nowNs() + 5'000'000'000;
  while (externalInFlight_ > 0 && fault_ == ConnFault::None && nowNs() < until) progress();
}

const void* IbConnection::tryPeek(size_t* bytes) {
  const size_t slot = consumed_ % nslots_;
  if (arrived_[slot] == 0) progress();
  if (arrived_[slot] == 0) return nullptr;
  *bytes = arrived_[slot] - 1;
  return mem_.ring + slot * slotBytes_;
}

void IbConnection::release() {
  const size_t slot = consumed_ % nslots_;
  arrived_[slot] = 0;
  ++consumed_;
  grant(consumed_ - 1 + nslots_);
}

void IbConnection::grant(uint64_t seq) {
  if (fault_ != ConnFault::None) return;
  Lane& lane = laneOf(seq);
  // The receive for the message first: its write may follow the grant at once.
  if (int rc = lane.postRecv(makeWrId(WrKind::Recv, seq), *counters_); rc != 0) {
    fail(ConnFault::Failed,
         fmt::format("posting a receive for rank {} on {} failed: {}", peer_, nic_, std::strerror(rc)));
    return;
  }
  pendingGrants_.push_back(seq);
  flushGrants();
}

void IbConnection::flushGrants() {
  size_t done = 0;
  for (; done < pendingGrants_.size() && fault_ == ConnFault::None; ++done) {
    const uint64_t seq = pendingGrants_[done];
    Lane& lane = laneOf(seq);
    if (!lane.canPost()) break;
    const size_t slot = seq % nslots_;
    grantScratch_.addr = reinterpret_cast<uintptr_t>(mem_.ring + slot * slotBytes_);
    if (inject_ == Inject::GrantAddr) grantScratch_.addr += slotBytes_ * nslots_;
    grantScratch_.rkey = inject_ == Inject::GrantRkey ? mem_.ringRkey ^ 0x5a5a00u : mem_.ringRkey;
    grantScratch_.size = static_cast<uint32_t>(slotBytes_);
    grantScratch_.seq = seq + 1;
    grantScratch_.pad = 0;
    ibv_sge sge{};
    sge.addr = reinterpret_cast<uintptr_t>(&grantScratch_);  // inline: copied at post, no lkey
    sge.length = sizeof(CtsEntry);
    ibv_send_wr wr{};
    wr.wr_id = makeWrId(WrKind::Cts, seq);
    wr.sg_list = &sge;
    wr.num_sge = 1;
    wr.opcode = IBV_WR_RDMA_WRITE;
    wr.send_flags = IBV_SEND_INLINE | (lane.mustSignal() ? IBV_SEND_SIGNALED : 0);
    wr.wr.rdma.remote_addr = mem_.peerCts + slot * sizeof(CtsEntry);
    wr.wr.rdma.rkey = mem_.peerCtsRkey;
    if (int rc = lane.postSend(wr, *counters_); rc != 0) {
      fail(ConnFault::Failed, fmt::format("posting a grant to rank {} on {} failed: {}", peer_, nic_, std::strerror(rc)));
      break;
    }
    counters_->ctrlBytes += sizeof(CtsEntry);
  }
  pendingGrants_.erase(pendingGrants_.begin(), pendingGrants_.begin() + static_cast<long>(done));
}

bool IbConnection::progress() {
  bool any = false;
  ibv_wc wc[16];
  for (Lane* lane : lanes_) {
    for (;;) {
      const int n = lane->poll(wc, 16, *counters_);
      if (n < 0) {
        fail(ConnFault::Failed, fmt::format("the completion queue of the connection to rank {} on {} overflowed",
                                            peer_, nic_));
        return any;
      }
      for (int i = 0; i < n; ++i) onCompletion(wc[i]);
      any = any || n > 0;
      if (n < 16) break;
    }
  }
  if (!pendingGrants_.empty()) flushGrants();
  return any;
}

void IbConnection::onCompletion(const ibv_wc& wc) {
  const WrKind kind = wrKind(wc.wr_id);
  const uint64_t seq = wrSeq(wc.wr_id);
  if (wc.status != IBV_WC_SUCCESS) {
    const std::string status = wcStatusText(*api_, wc.status);
    switch (kind) {
      case WrKind::Data:
        // The peer's NIC stopped answering (retry exceeded) or flushed: it
        // is gone.  Anything else is this transport's or the peer's bug.
        if (wc.status == IBV_WC_RETRY_EXC_ERR || wc.status == IBV_WC_WR_FLUSH_ERR)
          fail(ConnFault::PeerGone, fmt::format("writing to rank {} on {}: {}", peer_, nic_, status));
        else
          fail(ConnFault::Failed,
               fmt::format("writing message {} to rank {} on {} (channel {}) failed: {}", seq, peer_, nic_, channel_,
                           status));
        retire(seq % nslots_);
        return;
      case WrKind::Recv:
        if (wc.status == IBV_WC_WR_FLUSH_ERR)
          fail(ConnFault::PeerGone, fmt::format("receives from rank {} on {} flushed", peer_, nic_));
        else
          fail(ConnFault::Failed,
               fmt::format("receiving from rank {} on {} (channel {}) failed: {}", peer_, nic_, channel_, status));
        return;
      default:
        // A grant that could not land: the sender went away (it may have
        // finished its part and exited).
        if (wc.status == IBV_WC_RETRY_EXC_ERR || wc.status == IBV_WC_WR_FLUSH_ERR)
          fail(ConnFault::PeerGone, fmt::format("granting to rank {} on {}: {}", peer_, nic_, status));
        else
          fail(ConnFault::Failed,
               fmt::format("granting a slot to rank {} on {} (channel {}) failed: {}", peer_, nic_, channel_, status));
        return;
    }
  }
  if (kind == WrKind::Data) {
    retire(seq % nslots_);
    return;
  }
  if (kind != WrKind::Recv) return;
  if (wc.opcode != IBV_WC_RECV_RDMA_WITH_IMM || !(wc.wc_flags & IBV_WC_WITH_IMM)) {
    fail(ConnFault::Failed, fmt::format("rank {} sent an operation other than a write with immediate (channel {})",
                                        peer_, channel_));
    return;
  }
  const uint32_t imm = ntohl(wc.imm_data);
  const uint64_t got = consumed_ + (((imm >> 24) - consumed_) & 0xff);
  const size_t bytes = imm & 0xffffff;
  if (got - consumed_ >= static_cast<uint64_t>(nslots_) || arrived_[got % nslots_] != 0 || bytes > slotBytes_ ||
      bytes < transport::kSlotHeaderBytes || wc.qp_num != laneOf(got).qp->qp_num) {
    fail(ConnFault::Failed, fmt::format("rank {} wrote message {} of {} bytes where message {} of at most {} bytes "
                                        "was expected (channel {}, {})",
                                        peer_, got, bytes, consumed_, slotBytes_, channel_, nic_));
    return;
  }
  arrived_[got % nslots_] = static_cast<uint32_t>(bytes) + 1;
}

}  // namespace coll::ib
