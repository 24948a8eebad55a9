#include "ib/ib_lane.h"

namespace coll::ib {

int Lane::postSend(ibv_send_wr& wr, IbCounters& c) {
  wr.next = nullptr;
  const bool sig = (wr.send_flags & IBV_SEND_SIGNALED) != 0;
  ibv_send_wr* bad = nullptr;
  if (int rc = ibv_post_send(qp, &wr, &bad); rc != 0) return rc;
  ++posted;
  ++c.sendWrs;
  if (sig) {
    signaled.push_back({posted, wr.wr_id});
    sinceSignal = 0;
  } else {
    ++sinceSignal;
  }
  return 0;
}

int Lane::postRecv(uint64_t wrId, IbCounters& c) {
  ibv_recv_wr wr{};
  wr.wr_id = wrId;
  wr.sg_list = nullptr;
  wr.num_sge = 0;  // RDMA writes with immediate place no bytes through a receive
  ibv_recv_wr* bad = nullptr;
  if (int rc = ibv_post_recv(qp, &wr, &bad); rc != 0) return rc;
  ++c.recvWrs;
  return 0;
}

int Lane::poll(ibv_wc* wc, int n, IbCounters& c) {
  ++c.polls;
  const int got = ibv_poll_cq(cq, n, wc);
  if (got <= 0) return got;
  c.cqes += static_cast<uint64_t>(got);
  for (int i = 0; i < got; ++i) {
    if (wrKind(wc[i].wr_id) == WrKind::Recv) continue;
    if (wc[i].status != IBV_WC_SUCCESS) {
      // Flushed WRs complete whether signaled or not: nothing is posted on
      // this QP again, so the accounting ends here.
      failed = true;
      continue;
    }
    if (!signaled.empty()) {
      retired = signaled.front().position;
      signaled.pop_front();
    }
  }
  return got;
}

}  // namespace coll::ib
