// ibv_post_recv (through ctx->ops.post_recv): receive WRs go to the QP's
// shared ring, where the peer's writer takes them.  At most max_recv_wr
// outstanding (ENOMEM beyond); from INIT on, as verbs allows; in ERR they
// are flushed at once.
#include <cerrno>

#include "objects.h"
#include "ops.h"

namespace coll::verbs_emu {

int postRecv(ibv_qp* qp, ibv_recv_wr* wr, ibv_recv_wr** bad_wr) {
  Process& p = process();
  std::lock_guard<std::mutex> guard(p.mu);
  EmuQp* q = emuQp(qp);
  for (; wr; wr = wr->next) {
    int err = 0;
    if (qp->state == IBV_QPS_RESET)
      err = EINVAL;
    else if (wr->num_sge < 0 || static_cast<uint32_t>(wr->num_sge) > q->cap.max_recv_sge ||
             (wr->num_sge > 0 && wr->sg_list == nullptr))
      err = EINVAL;
    if (!err) {
      RecvEntry r{};
      r.wr_id = wr->wr_id;
      r.num_sge = static_cast<uint32_t>(wr->num_sge);
      for (int i = 0; i < wr->num_sge; ++i) {
        r.sge[i].addr = wr->sg_list[i].addr;
        r.sge[i].length = wr->sg_list[i].length;
        r.sge[i].lkey = wr->sg_list[i].lkey;
      }
      if (!q->rq->push(&r, false)) err = ENOMEM;
    }
    if (err) {
      *bad_wr = wr;
      return err;
    }
  }
  if (qp->state == IBV_QPS_ERR) enterError(p, q, IBV_WC_WR_FLUSH_ERR);
  return 0;
}

}  // namespace coll::verbs_emu
