// The error side of a QP: completions with error status, the move to ERR
// that flushes every outstanding WR, and noticing while polling that the
// peer's process died or that a responder error put this QP in ERR.
#include <cstring>

#include "objects.h"
#include "ops.h"
#include "peer.h"
#include "robust_mutex.h"

namespace coll::verbs_emu {
namespace {

// How often polling looks at the registry for its QPs: the bound on how long
// a peer's death goes unnoticed by a process that only polls.
constexpr auto kHealthInterval = std::chrono::milliseconds(10);

void completeRecvFlushed(EmuQp* q, const RecvEntry& r) {
  CqEntry e{};
  e.wc.wr_id = r.wr_id;
  e.wc.status = IBV_WC_WR_FLUSH_ERR;
  e.wc.opcode = IBV_WC_RECV;
  e.wc.qp_num = q->qp.qp_num;
  q->recv_cq->ring->push(&e, true);
}

}  // namespace

void completeSend(EmuQp* q, const PendingWr& w, ibv_wc_status status) {
  // Selective signaling: a successful unsignaled WR completes silently;
  // an error always produces a completion.
  if (status == IBV_WC_SUCCESS && !w.signaled) return;
  CqEntry e{};
  e.wc.wr_id = w.wr_id;
  e.wc.status = status;
  e.wc.opcode = (w.opcode == IBV_WR_SEND || w.opcode == IBV_WR_SEND_WITH_IMM) ? IBV_WC_SEND : IBV_WC_RDMA_WRITE;
  e.wc.qp_num = q->qp.qp_num;
  e.send_seq = w.seq;
  e.is_send = 1;
  q->send_cq->ring->push(&e, true);
}

void publishState(Process& p, EmuQp* q) {
  RobustLock lock(p.reg->mutex());
  QpRec& rec = p.reg->data()->qps[q->slot];
  if (!rec.live || rec.qpn != q->qp.qp_num) return;
  // A responder error a peer recorded stands until we have seen it (health
  // check) or reset the QP.
  if (rec.state != IBV_QPS_ERR || q->qp.state == IBV_QPS_RESET || q->qp.state == IBV_QPS_ERR)
    rec.state = q->qp.state;
  rec.access_flags = static_cast<int32_t>(q->attr.qp_access_flags);
  rec.min_rnr_timer = q->attr.min_rnr_timer;
  rec.dest_qpn = q->attr.dest_qp_num;
  rec.dest_is_global = q->attr.ah_attr.is_global;
  rec.dest_lid = q->attr.ah_attr.dlid;
  std::memcpy(rec.dest_gid, q->attr.ah_attr.grh.dgid.raw, 16);
}

void enterError(Process& p, EmuQp* q, ibv_wc_status first_status) {
  q->qp.state = IBV_QPS_ERR;
  q->attr.qp_state = IBV_QPS_ERR;
  publishState(p, q);
  bool first = true;
  for (const PendingWr& w : q->pending) {
    completeSend(q, w, first ? first_status : IBV_WC_WR_FLUSH_ERR);
    first = false;
  }
  q->pending.clear();
  RecvEntry r[16];
  for (uint32_t n; (n = q->rq->pop(r, 16)) > 0;)
    for (uint32_t i = 0; i < n; ++i) completeRecvFlushed(q, r[i]);
}

void checkHealth(Process& p, EmuCq* cq) {
  const auto now = Clock::now();
  if (now < cq->next_health_check) return;
  cq->next_health_check = now + kHealthInterval;
  for (EmuQp* q : p.qps) {
    if (q->send_cq != cq && q->recv_cq != cq) continue;
    if (q->qp.state != IBV_QPS_RTR && q->qp.state != IBV_QPS_RTS) continue;
    bool remote_error = false;
    pid_t peer_pid = q->peer_pid;
    {
      RobustLock lock(p.reg->mutex());
      remote_error = p.reg->data()->qps[q->slot].state == IBV_QPS_ERR;
      if (const QpRec* peer = findPeer(p.reg, q)) peer_pid = peer->pid;
    }
    if (remote_error || (peer_pid != 0 && !processAlive(peer_pid))) enterError(p, q, IBV_WC_WR_FLUSH_ERR);
  }
}

}  // namespace coll::verbs_emu
