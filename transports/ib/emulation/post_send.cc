// ibv_post_send (through ctx->ops.post_send): checks each WR as a provider
// does at post time (errno and *bad_wr), then queues it on the QP and runs
// what can run now.  A WR waits only while its receiver is not ready (RNR):
// later WRs of the QP wait behind it, and polling retries it after the
// responder's RNR timer, up to rnr_retry times (7: for ever).  Retrying at
// poll instead of sleeping in post keeps a one-thread loopback (both QPs in
// one process) from deadlocking.
#include <cerrno>
#include <cstring>

#include "objects.h"
#include "ops.h"
#include "send_exec.h"

namespace coll::verbs_emu {
namespace {

// The RNR NAK timer encodings of the IB spec (table 45), in microseconds.
constexpr uint32_t kRnrMicros[32] = {655360, 10,    20,    30,    40,    60,     80,     120,
                                     160,    240,   320,   480,   640,   960,    1280,   1920,
                                     2560,   3840,  5120,  7680,  10240, 15360,  20480,  30720,
                                     40960,  61440, 81920, 122880, 163840, 245760, 327680, 491520};

constexpr int kSupportedFlags = IBV_SEND_SIGNALED | IBV_SEND_INLINE | IBV_SEND_SOLICITED | IBV_SEND_FENCE;

int checkWr(const EmuQp* q, const ibv_send_wr* wr) {
  switch (wr->opcode) {
    case IBV_WR_RDMA_WRITE:
    case IBV_WR_RDMA_WRITE_WITH_IMM:
    case IBV_WR_SEND:
    case IBV_WR_SEND_WITH_IMM:
      break;
    default:
      return EINVAL;  // reads, atomics, MW binds, TSO are not emulated
  }
  if ((wr->send_flags & ~kSupportedFlags) != 0) return EINVAL;
  if (wr->num_sge < 0 || static_cast<uint32_t>(wr->num_sge) > q->cap.max_send_sge) return EINVAL;
  if (wr->num_sge > 0 && wr->sg_list == nullptr) return EINVAL;
  if (wr->send_flags & IBV_SEND_INLINE) {
    uint64_t total = 0;
    for (int i = 0; i < wr->num_sge; ++i) total += wr->sg_list[i].length;
    if (total > q->cap.max_inline_data) return EINVAL;
  }
  return 0;
}

PendingWr makePending(const EmuQp* q, const ibv_send_wr* wr) {
  PendingWr w;
  w.wr_id = wr->wr_id;
  w.opcode = wr->opcode;
  w.signaled = q->sig_all || (wr->send_flags & IBV_SEND_SIGNALED);
  w.imm = wr->imm_data;
  if (wr->opcode == IBV_WR_RDMA_WRITE || wr->opcode == IBV_WR_RDMA_WRITE_WITH_IMM) {
    w.remote_addr = wr->wr.rdma.remote_addr;
    w.rkey = wr->wr.rdma.rkey;
  }
  w.is_inline = (wr->send_flags & IBV_SEND_INLINE) != 0;
  for (int i = 0; i < wr->num_sge; ++i) {
    const ibv_sge& s = wr->sg_list[i];
    if (w.is_inline) {
      const auto* b = reinterpret_cast<const uint8_t*>(s.addr);
      w.inline_data.insert(w.inline_data.end(), b, b + s.length);
    } else {
      w.sges.push_back(s);
    }
  }
  return w;
}

}  // namespace

void runPending(Process& p, EmuQp* q) {
  const auto now = Clock::now();
  while (!q->pending.empty() && q->qp.state == IBV_QPS_RTS) {
    PendingWr& w = q->pending.front();
    if (now < w.not_before) return;
    const ExecResult r = executeWr(p, q, w);
    if (r.receiver_not_ready) {
      if (q->attr.rnr_retry != 7 && w.rnr_attempts >= q->attr.rnr_retry) {
        enterError(p, q, IBV_WC_RNR_RETRY_EXC_ERR);
        return;
      }
      ++w.rnr_attempts;
      w.not_before = now + std::chrono::microseconds(kRnrMicros[r.peer_min_rnr_timer & 31]);
      return;
    }
    if (r.status != IBV_WC_SUCCESS) {
      // The failed WR completes with its error; the QP goes to ERR and every
      // WR behind it is flushed, as on a real RC QP.
      enterError(p, q, r.status);
      return;
    }
    completeSend(q, w, IBV_WC_SUCCESS);
    q->pending.pop_front();
  }
}

int postSend(ibv_qp* qp, ibv_send_wr* wr, ibv_send_wr** bad_wr) {
  Process& p = process();
  std::lock_guard<std::mutex> guard(p.mu);
  EmuQp* q = emuQp(qp);
  for (; wr; wr = wr->next) {
    int err = 0;
    if (qp->state != IBV_QPS_RTS && qp->state != IBV_QPS_ERR)
      err = EINVAL;  // a send queue works from RTS on
    else if ((err = checkWr(q, wr)) == 0 && q->send_posted - q->send_retired >= q->cap.max_send_wr)
      err = ENOMEM;  // the send queue is full: completions not polled, or never signaled
    if (err) {
      *bad_wr = wr;
      runPending(p, q);
      return err;
    }
    PendingWr w = makePending(q, wr);
    w.seq = ++q->send_posted;
    if (qp->state == IBV_QPS_ERR)
      completeSend(q, w, IBV_WC_WR_FLUSH_ERR);  // a QP in ERR flushes what is posted
    else
      q->pending.push_back(std::move(w));
  }
  runPending(p, q);
  return 0;
}

}  // namespace coll::verbs_emu
