#include "ib/ib_control.h"

#include <arpa/inet.h>
#include <time.h>

#include <cstring>

#include "coll/base/clock.h"
#include "ib/ib_qp.h"

namespace coll::ib {
namespace {

constexpr uint32_t kImmNotice = 1;
constexpr uint32_t kImmWait = 2;

uint32_t packImm(uint32_t kind, uint32_t value) { return htonl((kind << 24) | (value & 0xffffff)); }

}  // namespace

IbControl::IbControl(const VerbsApi* api, int peer, std::string nicLabel, Lane* lane, Memory mem, IbCounters* counters)
    : api_(api), peer_(peer), nic_(std::move(nicLabel)), lane_(lane), mem_(mem), counters_(counters) {}

Status IbControl::start() {
  for (int i = 0; i < kCtrlRecvs; ++i)
    if (int rc = lane_->postRecv(makeWrId(WrKind::Recv, recvSeq_++), *counters_); rc != 0)
      return makeError(collSystemError, "ib: posting a control receive for rank {} on {} failed: {}", peer_, nic_,
                       std::strerror(rc));
  return Status::ok();
}

void IbControl::progress() {
  if (gone_ && lane_->failed) return;
  ibv_wc wc[8];
  for (;;) {
    const int n = lane_->poll(wc, 8, *counters_);
    if (n < 0) {
      gone_ = true;
      return;
    }
    for (int i = 0; i < n; ++i) onCompletion(wc[i]);
    if (n < 8) return;
  }
}

void IbControl::onCompletion(const ibv_wc& wc) {
  const WrKind kind = wrKind(wc.wr_id);
  if (wc.status != IBV_WC_SUCCESS) {
    // Flushed receives or a probe, notice or report the peer's NIC did not
    // take: its QP is gone (the process exited or died).
    gone_ = true;
    if (kind == WrKind::Probe) probeOut_ = false;
    return;
  }
  if (kind == WrKind::Probe) {
    probeOut_ = false;
    return;
  }
  if (kind != WrKind::Recv) return;
  const uint32_t imm = ntohl(wc.imm_data);
  const uint32_t what = imm >> 24, value = imm & 0xffffff;
  if (what == kImmNotice && value <= kNoticeBytes) {
    if (!noticed_) {
      noticed_ = true;
      noticeText_.assign(mem_.block, value);
    }
  } else if (what == kImmWait) {
    waitingFor_ = static_cast<int>(value) - 2;
  } else if (error_.empty()) {
    error_ = fmt::format("rank {} sent an unknown control message {:#x}", peer_, imm);
  }
  if (int rc = lane_->postRecv(makeWrId(WrKind::Recv, recvSeq_++), *counters_); rc != 0 && error_.empty())
    error_ = fmt::format("posting a control receive for rank {} on {} failed: {}", peer_, nic_, std::strerror(rc));
}

void IbControl::sendNotice(size_t bytes) {
  if (notified_) return;
  notified_ = true;
  progress();
  if (gone_ || !lane_->canPost()) return;
  ibv_sge sge{};
  sge.addr = reinterpret_cast<uintptr_t>(mem_.noticeOut);
  sge.length = static_cast<uint32_t>(std::min(bytes, kNoticeBytes));
  sge.lkey = mem_.noticeLkey;
  ibv_send_wr wr{};
  wr.wr_id = makeWrId(WrKind::Notice, 0);
  wr.sg_list = &sge;
  wr.num_sge = sge.length > 0 ? 1 : 0;
  wr.opcode = IBV_WR_RDMA_WRITE_WITH_IMM;
  wr.send_flags = IBV_SEND_SIGNALED;
  wr.imm_data = packImm(kImmNotice, sge.length);
  wr.wr.rdma.remote_addr = mem_.peerBlock;
  wr.wr.rdma.rkey = mem_.peerBlockRkey;
  if (lane_->postSend(wr, *counters_) != 0) return;
  counters_->ctrlBytes += sge.length;
  // The process may exit right after: wait (bounded) until the NIC has it.
  const uint64_t target = lane_->posted;
  const int64_t until = nowNs() + 300'000'000;
  while (lane_->retired < target && !gone_ && nowNs() < until) {
    progress();
    timespec ts{0, 100'000};
    nanosleep(&ts, nullptr);
  }
}

void IbControl::sendWait(int waitingFor) {
  progress();
  if (gone_ || notified_ || !lane_->canPost()) return;
  ibv_send_wr wr{};
  wr.wr_id = makeWrId(WrKind::Wait, 0);
  wr.num_sge = 0;
  wr.opcode = IBV_WR_RDMA_WRITE_WITH_IMM;
  wr.send_flags = lane_->mustSignal() ? IBV_SEND_SIGNALED : 0;
  wr.imm_data = packImm(kImmWait, static_cast<uint32_t>(waitingFor + 2));
  wr.wr.rdma.remote_addr = mem_.peerBlock;
  wr.wr.rdma.rkey = mem_.peerBlockRkey;
  if (lane_->postSend(wr, *counters_) == 0) counters_->ctrlBytes += 4;
}

void IbControl::probe(int64_t now, int64_t intervalNs) {
  progress();
  if (gone_ || probeOut_ || now - lastProbeNs_ < intervalNs || !lane_->canPost()) return;
  lastProbeNs_ = now;
  ++probeWord_;
  ibv_sge sge{};
  sge.addr = reinterpret_cast<uintptr_t>(&probeWord_);
  sge.length = sizeof(probeWord_);
  ibv_send_wr wr{};
  wr.wr_id = makeWrId(WrKind::Probe, probeWord_);
  wr.sg_list = &sge;
  wr.num_sge = 1;
  wr.opcode = IBV_WR_RDMA_WRITE;
  wr.send_flags = IBV_SEND_SIGNALED | IBV_SEND_INLINE;
  wr.wr.rdma.remote_addr = mem_.peerBlock + kNoticeBytes;
  wr.wr.rdma.rkey = mem_.peerBlockRkey;
  if (lane_->postSend(wr, *counters_) == 0) {
    probeOut_ = true;
    counters_->ctrlBytes += sizeof(probeWord_);
  }
}

}  // namespace coll::ib
