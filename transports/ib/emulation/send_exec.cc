// The data path runs in the posting (or polling) thread: the requester can
// reach the target's memory (process_vm_writev) and its receive queue and CQ
// (shared-memory rings), so no progress thread is needed.  Checks come
// first and a failing one writes nothing:
//   requester: peer QP exists, is RTR/RTS and connected back to us, else
//              IBV_WC_RETRY_EXC_ERR (a real requester hears nothing and
//              times out); every sge inside a live MR of that lkey, this
//              process and this QP's PD, else IBV_WC_LOC_PROT_ERR;
//   responder: the rkey names a live MR of the target process and QP's PD,
//              with IBV_ACCESS_REMOTE_WRITE, covering the whole range, and the
//              target QP allows remote writes, else IBV_WC_REM_ACCESS_ERR;
//              a WITH_IMM or SEND needs a posted receive WR, else
//              receiver-not-ready (the caller retries per rnr_retry).
// Ordering: a WR's bytes are all in the target's memory before its receive
// completion is pushed, and WRs of one QP run in post order, so RDMA writes
// land before the completion of a later WITH_IMM on the same QP.
#include "send_exec.h"

#include <signal.h>

#include <cerrno>

#include "peer.h"
#include "remote_copy.h"
#include "robust_mutex.h"

namespace coll::verbs_emu {
namespace {

bool inside(const MrRec& mr, uint64_t addr, uint64_t len) {
  return addr >= mr.addr && len <= mr.length && addr - mr.addr <= mr.length - len;
}

bool needsReceive(ibv_wr_opcode op) {
  return op == IBV_WR_RDMA_WRITE_WITH_IMM || op == IBV_WR_SEND || op == IBV_WR_SEND_WITH_IMM;
}

bool isWrite(ibv_wr_opcode op) { return op == IBV_WR_RDMA_WRITE || op == IBV_WR_RDMA_WRITE_WITH_IMM; }

// A responder error moves the responder's QP to ERR too (its owner notices
// at its next poll and flushes its receive WRs).
void markResponderError(Process& p, uint32_t peer_qpn) {
  RobustLock lock(p.reg->mutex());
  if (QpRec* peer = p.reg->qpByNum(peer_qpn)) peer->state = IBV_QPS_ERR;
}

ExecResult fail(ibv_wc_status status) {
  ExecResult r;
  r.status = status;
  return r;
}

// Delivers a receive completion to the responder's CQ; a full CQ breaks
// (its owner's polls fail), it never drops the completion quietly.
void pushRecvCompletion(Process& p, const QpRec& peer, const ibv_wc& wc) {
  CqEntry e{};
  e.wc = wc;
  if (Ring* cq = mappedRing(p, peer.recv_cq_seg)) cq->push(&e, true);
}

// Checks a SEND's target receive WR and scatters into it.
ibv_wc_status deliverSend(Process& p, const QpRec& peer, const RecvEntry& r, const std::vector<iovec>& local,
                          size_t total, ibv_wc* recv_wc) {
  std::vector<iovec> remote;
  size_t room = 0;
  {
    RobustLock lock(p.reg->mutex());
    for (uint32_t i = 0; i < r.num_sge; ++i) {
      if (r.sge[i].length == 0) continue;
      const MrRec* mr = p.reg->mrByKey(r.sge[i].lkey, true);
      if (!mr || mr->pid != peer.pid || mr->pd != peer.pd || !(mr->access & IBV_ACCESS_LOCAL_WRITE) ||
          !inside(*mr, r.sge[i].addr, r.sge[i].length)) {
        recv_wc->status = IBV_WC_LOC_PROT_ERR;
        return IBV_WC_REM_OP_ERR;
      }
      remote.push_back({reinterpret_cast<void*>(r.sge[i].addr), r.sge[i].length});
      room += r.sge[i].length;
    }
  }
  if (room < total) {
    recv_wc->status = IBV_WC_LOC_LEN_ERR;
    return IBV_WC_REM_INV_REQ_ERR;
  }
  const int err = scatterRemote(peer.pid, local, remote);
  if (err == ESRCH) return IBV_WC_RETRY_EXC_ERR;
  if (err != 0) {
    recv_wc->status = IBV_WC_LOC_PROT_ERR;
    return IBV_WC_REM_OP_ERR;
  }
  return IBV_WC_SUCCESS;
}

}  // namespace

ExecResult executeWr(Process& p, EmuQp* q, const PendingWr& w) {
  std::vector<iovec> local;
  size_t total = 0;
  if (w.is_inline) {
    if (!w.inline_data.empty())
      local.push_back({const_cast<uint8_t*>(w.inline_data.data()), w.inline_data.size()});
    total = w.inline_data.size();
  } else {
    for (const ibv_sge& s : w.sges) {
      if (s.length == 0) continue;
      local.push_back({reinterpret_cast<void*>(s.addr), s.length});
      total += s.length;
    }
  }
  QpRec peer{};
  bool access_error = false;
  {
    RobustLock lock(p.reg->mutex());
    const QpRec& self = p.reg->data()->qps[q->slot];
    const QpRec* found = findPeer(p.reg, q);
    if (!found || (found->state != IBV_QPS_RTR && found->state != IBV_QPS_RTS) || !connectedBack(*found, q, self))
      return fail(IBV_WC_RETRY_EXC_ERR);
    peer = *found;
    if (!w.is_inline) {
      for (const ibv_sge& s : w.sges) {
        if (s.length == 0) continue;
        const MrRec* mr = p.reg->mrByKey(s.lkey, true);
        if (!mr || mr->pid != p.pid || mr->pd != q->pd->id || !inside(*mr, s.addr, s.length))
          return fail(IBV_WC_LOC_PROT_ERR);
      }
    }
    // A zero-length write carries no rkey check (IB spec 9.7.4.1.5).
    if (isWrite(w.opcode) && total > 0) {
      const MrRec* mr = p.reg->mrByKey(w.rkey, false);
      if (!mr || mr->pid != peer.pid || mr->pd != peer.pd || !(mr->access & IBV_ACCESS_REMOTE_WRITE) ||
          !(peer.access_flags & IBV_ACCESS_REMOTE_WRITE) || !inside(*mr, w.remote_addr, total))
        access_error = true;
    }
  }
  // A dead responder answers nothing, whatever the request.  kill() is the
  // cheap test; a zombie (killed, not yet reaped) passes it, so an error
  // path looks closer (processAlive reads /proc) before blaming the request.
  if (kill(peer.pid, 0) != 0 && errno == ESRCH) return fail(IBV_WC_RETRY_EXC_ERR);
  if (access_error) {
    if (!processAlive(peer.pid)) return fail(IBV_WC_RETRY_EXC_ERR);
    markResponderError(p, peer.qpn);
    return fail(IBV_WC_REM_ACCESS_ERR);
  }
  Ring* rq = nullptr;
  if (needsReceive(w.opcode)) {
    rq = mappedRing(p, peer.rq_seg);
    if (!rq) return fail(IBV_WC_RETRY_EXC_ERR);
    if (rq->size() == 0) {
      ExecResult r;
      r.receiver_not_ready = true;
      r.peer_min_rnr_timer = peer.min_rnr_timer;
      return r;
    }
  }
  if (isWrite(w.opcode) && total > 0) {
    const int err = writeRemote(peer.pid, local, w.remote_addr, total);
    if (err == ESRCH || (err != 0 && !processAlive(peer.pid))) return fail(IBV_WC_RETRY_EXC_ERR);
    if (err != 0) {  // registered, but unmapped in the target since
      markResponderError(p, peer.qpn);
      return fail(IBV_WC_REM_ACCESS_ERR);
    }
  }
  if (!rq) return {};
  RecvEntry r{};
  if (rq->pop(&r, 1) == 0) {  // flushed meanwhile by its owner (QP to ERR)
    return fail(IBV_WC_REM_OP_ERR);
  }
  ibv_wc wc{};
  wc.wr_id = r.wr_id;
  wc.status = IBV_WC_SUCCESS;
  wc.opcode = isWrite(w.opcode) ? IBV_WC_RECV_RDMA_WITH_IMM : IBV_WC_RECV;
  wc.byte_len = static_cast<uint32_t>(total);
  wc.qp_num = peer.qpn;
  wc.src_qp = q->qp.qp_num;
  if (w.opcode != IBV_WR_SEND) {
    wc.wc_flags = IBV_WC_WITH_IMM;
    wc.imm_data = w.imm;
  }
  ibv_wc_status status = IBV_WC_SUCCESS;
  if (!isWrite(w.opcode)) status = deliverSend(p, peer, r, local, total, &wc);
  pushRecvCompletion(p, peer, wc);
  if (wc.status != IBV_WC_SUCCESS) markResponderError(p, peer.qpn);
  return fail(status);
}

}  // namespace coll::verbs_emu
