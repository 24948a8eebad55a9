// The QP state machine: posts in the wrong state and transitions without
// their required attributes are refused, and the QP stays where it was.
#include <catch2/catch.hpp>
#include <cerrno>
#include <cstring>
#include <vector>

#include "endpoint.h"
#include "verbs_api.h"

using namespace verbs_emu_test;

namespace {

int postOneWrite(Endpoint& ep, ibv_send_wr** bad, ibv_send_wr* wr) {
  std::memset(wr, 0, sizeof(*wr));
  wr->opcode = IBV_WR_RDMA_WRITE;
  wr->send_flags = IBV_SEND_SIGNALED;
  return ibv_post_send(ep.qp, wr, bad);
}

int modify(Endpoint& ep, ibv_qp_attr a, int mask) { return verbs().modify_qp(ep.qp, &a, mask); }

ibv_qp_attr rtrAttr(const Wire& peer) {
  ibv_qp_attr a{};
  a.qp_state = IBV_QPS_RTR;
  a.path_mtu = IBV_MTU_4096;
  a.dest_qp_num = peer.qpn;
  a.min_rnr_timer = 1;
  a.max_dest_rd_atomic = 1;
  a.ah_attr.is_global = 1;
  a.ah_attr.port_num = 1;
  a.ah_attr.grh.sgid_index = 1;
  std::memcpy(a.ah_attr.grh.dgid.raw, peer.gid, 16);
  return a;
}

constexpr int kInitMask = IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS;
constexpr int kRtrMask = IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
                         IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER;
constexpr int kRtsMask = IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY | IBV_QP_SQ_PSN |
                         IBV_QP_MAX_QP_RD_ATOMIC;

// Every required bit of mask but IBV_QP_STATE, one at a time.
std::vector<int> requiredBits(int mask) {
  std::vector<int> bits;
  for (int b = 1; b != 0 && b <= mask; b <<= 1)
    if ((mask & b) && b != IBV_QP_STATE) bits.push_back(b);
  return bits;
}

}  // namespace

TEST_CASE("verbs emu: posting before RTS fails with EINVAL", "[verbs_emu]") {
  Endpoint a, b;
  REQUIRE(a.open());
  REQUIRE(b.open());
  ibv_send_wr wr{}, *bad = nullptr;
  ibv_recv_wr rwr{}, *rbad = nullptr;
  CHECK(a.state() == IBV_QPS_RESET);
  CHECK(postOneWrite(a, &bad, &wr) == EINVAL);
  CHECK(bad == &wr);
  CHECK(ibv_post_recv(a.qp, &rwr, &rbad) == EINVAL);
  CHECK(rbad == &rwr);
  REQUIRE(a.toInit() == 0);
  CHECK(postOneWrite(a, &bad, &wr) == EINVAL);
  CHECK(ibv_post_recv(a.qp, &rwr, &rbad) == 0);  // receives may be posted from INIT on
  REQUIRE(a.toRtr(b.wire()) == 0);
  CHECK(postOneWrite(a, &bad, &wr) == EINVAL);
  ibv_wc wc{};
  CHECK(ibv_poll_cq(a.send_cq, 1, &wc) == 0);
  a.close();
  b.close();
}

TEST_CASE("verbs emu: a transition without a required attribute is EINVAL", "[verbs_emu]") {
  Endpoint a, b;
  REQUIRE(a.open());
  REQUIRE(b.open());
  ibv_qp_attr init{};
  init.qp_state = IBV_QPS_INIT;
  init.port_num = 1;
  init.qp_access_flags = IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_LOCAL_WRITE;
  for (int bit : requiredBits(kInitMask)) {
    INFO("INIT without mask bit " << bit);
    CHECK(modify(a, init, kInitMask & ~bit) == EINVAL);
    CHECK(a.state() == IBV_QPS_RESET);
  }
  CHECK(modify(a, rtrAttr(b.wire()), kRtrMask) == EINVAL);  // RESET -> RTR skips INIT
  CHECK(modify(a, init, kInitMask | IBV_QP_SQ_PSN) == EINVAL);  // INIT takes no SQ PSN
  REQUIRE(modify(a, init, kInitMask) == 0);
  for (int bit : requiredBits(kRtrMask)) {
    INFO("RTR without mask bit " << bit);
    CHECK(modify(a, rtrAttr(b.wire()), kRtrMask & ~bit) == EINVAL);
    CHECK(a.state() == IBV_QPS_INIT);
  }
  ibv_qp_attr no_grh = rtrAttr(b.wire());
  no_grh.ah_attr.is_global = 0;
  no_grh.ah_attr.dlid = 1;
  CHECK(modify(a, no_grh, kRtrMask) == EINVAL);  // RoCE needs a GRH
  ibv_qp_attr bad_gid = rtrAttr(b.wire());
  bad_gid.ah_attr.grh.sgid_index = 5;
  CHECK(modify(a, bad_gid, kRtrMask) == EINVAL);
  REQUIRE(modify(a, rtrAttr(b.wire()), kRtrMask) == 0);
  ibv_qp_attr rts{};
  rts.qp_state = IBV_QPS_RTS;
  rts.timeout = 14;
  rts.retry_cnt = 7;
  rts.rnr_retry = 7;
  rts.max_rd_atomic = 1;
  for (int bit : requiredBits(kRtsMask)) {
    INFO("RTS without mask bit " << bit);
    CHECK(modify(a, rts, kRtsMask & ~bit) == EINVAL);
    CHECK(a.state() == IBV_QPS_RTR);
  }
  rts.rnr_retry = 8;
  CHECK(modify(a, rts, kRtsMask) == EINVAL);  // out of range
  rts.rnr_retry = 7;
  REQUIRE(modify(a, rts, kRtsMask) == 0);
  CHECK(a.state() == IBV_QPS_RTS);
  ibv_qp_attr to_reset{};
  to_reset.qp_state = IBV_QPS_RESET;
  CHECK(modify(a, to_reset, IBV_QP_STATE) == 0);
  CHECK(a.state() == IBV_QPS_RESET);
  a.close();
  b.close();
}
