#include "endpoint.h"

#include <chrono>
#include <cstring>

#include "verbs_api.h"

namespace verbs_emu_test {

bool Endpoint::open(const EndpointOptions& o) {
  opt = o;
  int n = 0;
  ibv_device** list = verbs().get_device_list(&n);
  if (!list || n <= o.nic) {
    if (list) verbs().free_device_list(list);
    return false;
  }
  ctx = verbs().open_device(list[o.nic]);
  verbs().free_device_list(list);
  if (!ctx) return false;
  pd = verbs().alloc_pd(ctx);
  send_cq = verbs().create_cq(ctx, o.cq_depth, nullptr, nullptr, 0);
  recv_cq = verbs().create_cq(ctx, o.cq_depth, nullptr, nullptr, 0);
  if (!pd || !send_cq || !recv_cq) return false;
  ibv_qp_init_attr init{};
  init.send_cq = send_cq;
  init.recv_cq = recv_cq;
  init.qp_type = IBV_QPT_RC;
  init.cap.max_send_wr = o.max_send_wr;
  init.cap.max_recv_wr = o.max_recv_wr;
  init.cap.max_send_sge = 2;
  init.cap.max_recv_sge = 2;
  init.cap.max_inline_data = o.max_inline;
  qp = verbs().create_qp(pd, &init);
  return qp != nullptr;
}

void Endpoint::close() {
  if (qp) verbs().destroy_qp(qp);
  if (send_cq) verbs().destroy_cq(send_cq);
  if (recv_cq) verbs().destroy_cq(recv_cq);
  if (pd) verbs().dealloc_pd(pd);
  if (ctx) verbs().close_device(ctx);
  *this = Endpoint{};
}

Wire Endpoint::wire() const {
  Wire w;
  w.qpn = qp->qp_num;
  ibv_gid gid{};
  verbs().query_gid(ctx, 1, 1, &gid);
  std::memcpy(w.gid, gid.raw, 16);
  return w;
}

int Endpoint::toInit() {
  ibv_qp_attr a{};
  a.qp_state = IBV_QPS_INIT;
  a.pkey_index = 0;
  a.port_num = 1;
  a.qp_access_flags = static_cast<unsigned>(opt.qp_access);
  return verbs().modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS);
}

int Endpoint::toRtr(const Wire& peer) {
  ibv_qp_attr a{};
  a.qp_state = IBV_QPS_RTR;
  a.path_mtu = IBV_MTU_4096;
  a.dest_qp_num = peer.qpn;
  a.rq_psn = 0;
  a.max_dest_rd_atomic = 1;
  a.min_rnr_timer = opt.min_rnr_timer;
  a.ah_attr.is_global = 1;
  std::memcpy(a.ah_attr.grh.dgid.raw, peer.gid, 16);
  a.ah_attr.grh.sgid_index = 1;
  a.ah_attr.grh.hop_limit = 64;
  a.ah_attr.port_num = 1;
  return verbs().modify_qp(qp, &a,
                           IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
                               IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER);
}

int Endpoint::toRts() {
  ibv_qp_attr a{};
  a.qp_state = IBV_QPS_RTS;
  a.timeout = 14;
  a.retry_cnt = 7;
  a.rnr_retry = opt.rnr_retry;
  a.sq_psn = 0;
  a.max_rd_atomic = 1;
  return verbs().modify_qp(qp, &a,
                           IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY | IBV_QP_SQ_PSN |
                               IBV_QP_MAX_QP_RD_ATOMIC);
}

ibv_qp_state Endpoint::state() const {
  ibv_qp_attr a{};
  ibv_qp_init_attr init{};
  verbs().query_qp(qp, &a, IBV_QP_STATE, &init);
  return a.qp_state;
}

bool pollOne(ibv_cq* cq, ibv_wc* wc, double seconds, int* rc) {
  const auto end = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
  int n = 0;
  do {
    n = ibv_poll_cq(cq, 1, wc);
    if (rc) *rc = n;
    if (n != 0) return n == 1;
  } while (std::chrono::steady_clock::now() < end);
  return false;
}

int postWrite(ibv_qp* qp, uint64_t wr_id, const void* local, uint32_t len, uint32_t lkey, uint64_t remote,
              uint32_t rkey, bool signaled, const uint32_t* imm) {
  ibv_sge sge{reinterpret_cast<uintptr_t>(local), len, lkey};
  ibv_send_wr wr{};
  wr.wr_id = wr_id;
  wr.sg_list = &sge;
  wr.num_sge = len > 0 ? 1 : 0;
  wr.opcode = imm ? IBV_WR_RDMA_WRITE_WITH_IMM : IBV_WR_RDMA_WRITE;
  wr.send_flags = signaled ? IBV_SEND_SIGNALED : 0;
  if (imm) wr.imm_data = *imm;
  wr.wr.rdma.remote_addr = remote;
  wr.wr.rdma.rkey = rkey;
  ibv_send_wr* bad = nullptr;
  return ibv_post_send(qp, &wr, &bad);
}

int postRecv(ibv_qp* qp, uint64_t wr_id, void* buf, uint32_t len, uint32_t lkey) {
  ibv_sge sge{reinterpret_cast<uintptr_t>(buf), len, lkey};
  ibv_recv_wr wr{};
  wr.wr_id = wr_id;
  wr.sg_list = &sge;
  wr.num_sge = buf ? 1 : 0;
  ibv_recv_wr* bad = nullptr;
  return ibv_post_recv(qp, &wr, &bad);
}

}  // namespace verbs_emu_test
