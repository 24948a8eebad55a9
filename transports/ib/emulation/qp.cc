// Queue pairs: RC only.  The QP's registry record (QPN, port GIDs/LID,
// state, connection, rings) is what a peer's writer looks up; the receive
// queue is a ring of exactly max_recv_wr entries in its own segment, since
// the peer's writer takes receive WRs from it.
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <new>

#include "objects.h"
#include "ops.h"
#include "robust_mutex.h"

using namespace coll::verbs_emu;

namespace {

constexpr uint32_t kMaxQpWr = 4096;
constexpr uint32_t kMaxSendSge = 16;
constexpr uint32_t kMaxInline = 256;

}  // namespace

extern "C" {

__attribute__((visibility("default"))) ibv_qp* ibv_create_qp(ibv_pd* pd, ibv_qp_init_attr* init) {
  // UD, UC, XRC, raw packet and SRQs are not emulated.
  if (init->qp_type != IBV_QPT_RC || init->srq != nullptr) {
    errno = EOPNOTSUPP;
    return nullptr;
  }
  const ibv_qp_cap& cap = init->cap;
  if (!init->send_cq || !init->recv_cq || cap.max_send_wr < 1 || cap.max_send_wr > kMaxQpWr ||
      cap.max_recv_wr > kMaxQpWr || cap.max_send_sge > kMaxSendSge || cap.max_recv_sge > kMaxRecvSge ||
      cap.max_inline_data > kMaxInline || init->send_cq->context != pd->context ||
      init->recv_cq->context != pd->context) {
    errno = EINVAL;
    return nullptr;
  }
  Process& p = process();
  std::lock_guard<std::mutex> guard(p.mu);
  auto* q = new (std::nothrow) EmuQp{};
  if (!q) {
    errno = ENOMEM;
    return nullptr;
  }
  EmuContext* ctx = emuContext(pd->context);
  {
    RobustLock lock(p.reg->mutex());
    q->rq_seg = p.reg->newId();
    if (!p.reg->addSeg(q->rq_seg, p.pid)) {
      delete q;
      errno = ENOMEM;
      return nullptr;
    }
  }
  q->rq = Ring::create(p.reg->segName(q->rq_seg), cap.max_recv_wr, sizeof(RecvEntry));
  if (!q->rq) {
    int saved = errno;
    RobustLock lock(p.reg->mutex());
    p.reg->freeSeg(q->rq_seg);
    delete q;
    errno = saved;
    return nullptr;
  }
  q->pd = emuPd(pd);
  q->send_cq = emuCq(init->send_cq);
  q->recv_cq = emuCq(init->recv_cq);
  q->cap = cap;
  q->sig_all = init->sq_sig_all != 0;
  q->qp.context = pd->context;
  q->qp.qp_context = init->qp_context;
  q->qp.pd = pd;
  q->qp.send_cq = init->send_cq;
  q->qp.recv_cq = init->recv_cq;
  q->qp.state = IBV_QPS_RESET;
  q->qp.qp_type = IBV_QPT_RC;
  q->attr.qp_state = IBV_QPS_RESET;
  q->attr.cap = cap;
  {
    // The slot is taken and its record published in one hold of the lock:
    // allocQp returns a slot that is not live yet, so between two holds a
    // process creating a QP at the same time (both sides of a connection
    // often do) could take the same slot, and one QPN would then name the
    // other's record (its peer's writes fail with IBV_WC_RETRY_EXC_ERR).
    RobustLock lock(p.reg->mutex());
    QpRec* found = p.reg->allocQp(&q->slot);
    if (!found) {
      p.reg->freeSeg(q->rq_seg);
      delete q;
      errno = ENOMEM;
      return nullptr;
    }
    QpRec& rec = *found;
    q->qp.qp_num = rec.qpn;
    q->qp.handle = q->slot;
    rec.pid = p.pid;
    rec.state = IBV_QPS_RESET;
    rec.pd = q->pd->id;
    for (int i = 0; i < kGidCount; ++i) std::memcpy(rec.gids[i], ctx->port.gids[i].raw, 16);
    rec.lid = ctx->port.lid;
    rec.dest_qpn = 0;
    rec.access_flags = 0;
    rec.rq_seg = q->rq_seg;
    rec.recv_cq_seg = q->recv_cq->seg;
    rec.live = 1;
  }
  pthread_mutex_init(&q->qp.mutex, nullptr);
  pthread_cond_init(&q->qp.cond, nullptr);
  ++q->pd->users;
  ++q->send_cq->users;
  ++q->recv_cq->users;
  p.qps.push_back(q);
  return &q->qp;
}

__attribute__((visibility("default"))) int ibv_query_qp(ibv_qp* qp, ibv_qp_attr* attr, int, ibv_qp_init_attr* init) {
  Process& p = process();
  std::lock_guard<std::mutex> guard(p.mu);
  EmuQp* q = emuQp(qp);
  // All attributes whatever the mask asks: providers may return more.
  *attr = q->attr;
  attr->qp_state = qp->state;
  attr->cur_qp_state = qp->state;
  attr->cap = q->cap;
  std::memset(init, 0, sizeof(*init));
  init->qp_context = qp->qp_context;
  init->send_cq = qp->send_cq;
  init->recv_cq = qp->recv_cq;
  init->cap = q->cap;
  init->qp_type = IBV_QPT_RC;
  init->sq_sig_all = q->sig_all ? 1 : 0;
  return 0;
}

__attribute__((visibility("default"))) int ibv_destroy_qp(ibv_qp* qp) {
  Process& p = process();
  std::lock_guard<std::mutex> guard(p.mu);
  EmuQp* q = emuQp(qp);
  if (p.reg) {
    RobustLock lock(p.reg->mutex());
    QpRec& rec = p.reg->data()->qps[q->slot];
    if (rec.live && rec.qpn == qp->qp_num) rec.live = 0;
    p.reg->freeSeg(q->rq_seg);
  }
  --q->pd->users;
  --q->send_cq->users;
  --q->recv_cq->users;
  p.qps.erase(std::remove(p.qps.begin(), p.qps.end(), q), p.qps.end());
  pthread_cond_destroy(&q->qp.cond);
  pthread_mutex_destroy(&q->qp.mutex);
  delete q;
  return 0;
}

}  // extern "C"
