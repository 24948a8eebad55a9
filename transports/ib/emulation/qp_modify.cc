// ibv_modify_qp: the RC state machine RESET -> INIT -> RTR -> RTS (any state
// -> RESET or ERR), with the attribute masks each transition requires and
// allows, as the kernel's ib_modify_qp_is_ok() checks them.  A missing
// required attribute, an attribute a transition does not take, or a value out
// of range is EINVAL and leaves the QP as it was.
#include <cerrno>
#include <cstring>

#include "objects.h"
#include "ops.h"
#include "peer.h"
#include "robust_mutex.h"

using namespace coll::verbs_emu;

namespace {

struct Transition {
  ibv_qp_state from;
  ibv_qp_state to;
  int required;
  int optional;
};

constexpr int kInitAttrs = IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS;
constexpr int kRtrRequired = IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
                             IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER;
constexpr int kRtsRequired =
    IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY | IBV_QP_SQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC;

// Alternate paths and path migration are not emulated, so they are in no
// transition's optional set.
constexpr Transition kTransitions[] = {
    {IBV_QPS_RESET, IBV_QPS_INIT, kInitAttrs, 0},
    {IBV_QPS_INIT, IBV_QPS_INIT, 0, kInitAttrs},
    {IBV_QPS_INIT, IBV_QPS_RTR, kRtrRequired, IBV_QP_ACCESS_FLAGS | IBV_QP_PKEY_INDEX},
    {IBV_QPS_RTR, IBV_QPS_RTS, kRtsRequired, IBV_QP_CUR_STATE | IBV_QP_ACCESS_FLAGS | IBV_QP_MIN_RNR_TIMER},
    {IBV_QPS_RTS, IBV_QPS_RTS, 0, IBV_QP_CUR_STATE | IBV_QP_ACCESS_FLAGS | IBV_QP_MIN_RNR_TIMER},
};

const Transition* findTransition(ibv_qp_state from, ibv_qp_state to) {
  for (const Transition& t : kTransitions)
    if (t.from == from && t.to == to) return &t;
  return nullptr;
}

bool valuesValid(const EmuContext* ctx, const ibv_qp_attr& a, int mask) {
  constexpr int kQpAccess = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ;
  if ((mask & IBV_QP_PORT) && a.port_num != 1) return false;
  if ((mask & IBV_QP_PKEY_INDEX) && a.pkey_index != 0) return false;
  if ((mask & IBV_QP_ACCESS_FLAGS) && (a.qp_access_flags & ~kQpAccess) != 0) return false;
  if ((mask & IBV_QP_PATH_MTU) && (a.path_mtu < IBV_MTU_256 || a.path_mtu > IBV_MTU_4096)) return false;
  if ((mask & IBV_QP_DEST_QPN) && a.dest_qp_num > 0xffffff) return false;
  if ((mask & IBV_QP_MIN_RNR_TIMER) && a.min_rnr_timer > 31) return false;
  if ((mask & IBV_QP_TIMEOUT) && a.timeout > 31) return false;
  if ((mask & IBV_QP_RETRY_CNT) && a.retry_cnt > 7) return false;
  if ((mask & IBV_QP_RNR_RETRY) && a.rnr_retry > 7) return false;
  if ((mask & IBV_QP_MAX_DEST_RD_ATOMIC) && a.max_dest_rd_atomic > 16) return false;
  if ((mask & IBV_QP_MAX_QP_RD_ATOMIC) && a.max_rd_atomic > 16) return false;
  if (mask & IBV_QP_AV) {
    const ibv_ah_attr& ah = a.ah_attr;
    if (ah.port_num != 1) return false;
    // RoCE addresses by GID only: an address vector without a GRH is invalid.
    if (!ctx->infiniband && !ah.is_global) return false;
    if (ah.is_global && ah.grh.sgid_index >= kGidCount) return false;
    if (!ah.is_global && ah.dlid == 0) return false;
  }
  return true;
}

// Copies the attributes in mask into the QP's record of them.
void storeAttrs(EmuQp* q, const ibv_qp_attr& a, int mask) {
  ibv_qp_attr& s = q->attr;
  if (mask & IBV_QP_PKEY_INDEX) s.pkey_index = a.pkey_index;
  if (mask & IBV_QP_PORT) s.port_num = a.port_num;
  if (mask & IBV_QP_ACCESS_FLAGS) s.qp_access_flags = a.qp_access_flags;
  if (mask & IBV_QP_AV) s.ah_attr = a.ah_attr;
  if (mask & IBV_QP_PATH_MTU) s.path_mtu = a.path_mtu;
  if (mask & IBV_QP_DEST_QPN) s.dest_qp_num = a.dest_qp_num;
  if (mask & IBV_QP_RQ_PSN) s.rq_psn = a.rq_psn;
  if (mask & IBV_QP_MAX_DEST_RD_ATOMIC) s.max_dest_rd_atomic = a.max_dest_rd_atomic;
  if (mask & IBV_QP_MIN_RNR_TIMER) s.min_rnr_timer = a.min_rnr_timer;
  if (mask & IBV_QP_TIMEOUT) s.timeout = a.timeout;
  if (mask & IBV_QP_RETRY_CNT) s.retry_cnt = a.retry_cnt;
  if (mask & IBV_QP_RNR_RETRY) s.rnr_retry = a.rnr_retry;
  if (mask & IBV_QP_SQ_PSN) s.sq_psn = a.sq_psn;
  if (mask & IBV_QP_MAX_QP_RD_ATOMIC) s.max_rd_atomic = a.max_rd_atomic;
}

// RESET forgets everything: waiting WRs and posted receives go without
// completions, as on a real device.
void reset(EmuQp* q) {
  q->pending.clear();
  RecvEntry drop[16];
  while (q->rq->pop(drop, 16) > 0) {
  }
  q->send_posted = 0;
  q->send_retired = 0;
  const ibv_qp_cap cap = q->cap;
  std::memset(&q->attr, 0, sizeof(q->attr));
  q->attr.cap = cap;
}

}  // namespace

extern "C" {

__attribute__((visibility("default"))) int ibv_modify_qp(ibv_qp* qp, ibv_qp_attr* attr, int mask) {
  Process& p = process();
  std::lock_guard<std::mutex> guard(p.mu);
  EmuQp* q = emuQp(qp);
  const ibv_qp_state from = qp->state;
  const ibv_qp_state to = (mask & IBV_QP_STATE) ? attr->qp_state : from;
  if ((mask & IBV_QP_CUR_STATE) && attr->cur_qp_state != from) return EINVAL;
  const int attrs = mask & ~(IBV_QP_STATE | IBV_QP_CUR_STATE);
  if (to == IBV_QPS_RESET || to == IBV_QPS_ERR) {
    if (attrs != 0) return EINVAL;
  } else {
    const Transition* t = findTransition(from, to);
    if (!t || (mask & t->required) != t->required ||
        (attrs & ~(t->required | t->optional) & ~IBV_QP_CUR_STATE) != 0)
      return EINVAL;
    if (!valuesValid(emuContext(qp->context), *attr, attrs)) return EINVAL;
  }
  storeAttrs(q, *attr, attrs);
  if (to == IBV_QPS_RESET) reset(q);
  if (to == IBV_QPS_ERR) {
    enterError(p, q, IBV_WC_WR_FLUSH_ERR);
    return 0;
  }
  qp->state = to;
  q->attr.qp_state = to;
  publishState(p, q);
  if (to == IBV_QPS_RTR) {
    // The peer's owner, for noticing its death while we only poll.
    RobustLock lock(p.reg->mutex());
    const QpRec* peer = findPeer(p.reg, q);
    q->peer_pid = peer ? peer->pid : 0;
  }
  return 0;
}

}  // extern "C"
