// Queue limits and receiver-not-ready, on two QPs of one process connected
// to each other: overflow and RNR are errors, never a silent drop.
#include <arpa/inet.h>

#include <catch2/catch.hpp>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <vector>

#include "endpoint.h"
#include "verbs_api.h"

using namespace verbs_emu_test;

namespace {

// a writes into b's buffer.
struct Loopback {
  Endpoint a, b;
  std::vector<uint8_t> src = std::vector<uint8_t>(4096, 1), dst = std::vector<uint8_t>(4096, 0);
  ibv_mr* src_mr = nullptr;
  ibv_mr* dst_mr = nullptr;

  Loopback(const EndpointOptions& oa, const EndpointOptions& ob) {
    REQUIRE(a.open(oa));
    REQUIRE(b.open(ob));
    REQUIRE(a.connect(b.wire()));
    REQUIRE(b.connect(a.wire()));
    src_mr = verbs().reg_mr(a.pd, src.data(), src.size(), IBV_ACCESS_LOCAL_WRITE);
    dst_mr = verbs().reg_mr(b.pd, dst.data(), dst.size(), IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
    REQUIRE(src_mr);
    REQUIRE(dst_mr);
  }
  ~Loopback() {
    verbs().dereg_mr(src_mr);
    verbs().dereg_mr(dst_mr);
    a.close();
    b.close();
  }
  int write(uint64_t wr_id, bool signaled, const uint32_t* imm = nullptr) {
    return postWrite(a.qp, wr_id, src.data(), 64, src_mr->lkey, reinterpret_cast<uintptr_t>(dst.data()),
                     dst_mr->rkey, signaled, imm);
  }
};

}  // namespace

TEST_CASE("verbs emu: WITH_IMM without a posted receive ends in IBV_WC_RNR_RETRY_EXC_ERR", "[verbs_emu]") {
  EndpointOptions oa;
  oa.rnr_retry = 2;
  EndpointOptions ob;
  ob.min_rnr_timer = 1;  // 10 us between tries
  Loopback l(oa, ob);
  const uint32_t imm = htonl(7);
  REQUIRE(l.write(5, true, &imm) == 0);
  ibv_wc wc{};
  REQUIRE(pollOne(l.a.send_cq, &wc, 5));
  CHECK(wc.wr_id == 5);
  CHECK(wc.status == IBV_WC_RNR_RETRY_EXC_ERR);
  CHECK(l.a.state() == IBV_QPS_ERR);
  // Later WRs on the QP are flushed.
  REQUIRE(l.write(6, false) == 0);
  REQUIRE(pollOne(l.a.send_cq, &wc, 1));
  CHECK(wc.wr_id == 6);
  CHECK(wc.status == IBV_WC_WR_FLUSH_ERR);
}

TEST_CASE("verbs emu: a receive posted while the sender retries is taken", "[verbs_emu]") {
  EndpointOptions oa;
  oa.rnr_retry = 7;  // for ever
  Loopback l(oa, {});
  const uint32_t imm = htonl(9);
  REQUIRE(l.write(5, true, &imm) == 0);
  REQUIRE(l.write(6, true) == 0);  // behind it: RC runs in order
  ibv_wc wc{};
  int rc = 0;
  CHECK_FALSE(pollOne(l.a.send_cq, &wc, 0.05, &rc));
  CHECK(rc == 0);
  REQUIRE(postRecv(l.b.qp, 42) == 0);
  REQUIRE(pollOne(l.a.send_cq, &wc, 2));
  CHECK(wc.wr_id == 5);
  CHECK(wc.status == IBV_WC_SUCCESS);
  REQUIRE(pollOne(l.a.send_cq, &wc, 2));
  CHECK(wc.wr_id == 6);
  REQUIRE(pollOne(l.b.recv_cq, &wc, 2));
  CHECK(wc.wr_id == 42);
  CHECK(wc.opcode == IBV_WC_RECV_RDMA_WITH_IMM);
  CHECK(ntohl(wc.imm_data) == 9);
}

TEST_CASE("verbs emu: a full send queue is ENOMEM until completions are polled", "[verbs_emu]") {
  EndpointOptions oa;
  oa.max_send_wr = 4;
  Loopback l(oa, {});
  SECTION("unsignaled WRs hold their slots") {
    for (int i = 0; i < 4; ++i) REQUIRE(l.write(static_cast<uint64_t>(i), false) == 0);
    CHECK(l.write(4, false) == ENOMEM);
    ibv_wc wc{};
    CHECK_FALSE(pollOne(l.a.send_cq, &wc, 0.02));
    CHECK(l.write(4, true) == ENOMEM);
  }
  SECTION("polling a signaled completion frees it and the unsignaled ones before it") {
    for (int i = 0; i < 3; ++i) REQUIRE(l.write(static_cast<uint64_t>(i), false) == 0);
    REQUIRE(l.write(3, true) == 0);
    CHECK(l.write(4, true) == ENOMEM);
    ibv_wc wc{};
    REQUIRE(pollOne(l.a.send_cq, &wc, 1));
    CHECK(wc.wr_id == 3);
    for (int i = 0; i < 4; ++i) CHECK(l.write(static_cast<uint64_t>(10 + i), i == 3) == 0);
    ibv_send_wr wr{}, *bad = nullptr;
    wr.opcode = IBV_WR_RDMA_WRITE;
    CHECK(ibv_post_send(l.a.qp, &wr, &bad) == ENOMEM);
    CHECK(bad == &wr);
  }
  SECTION("more receives than max_recv_wr") {
    EndpointOptions ob;
    ob.max_recv_wr = 2;
    Loopback small({}, ob);
    CHECK(postRecv(small.b.qp, 1) == 0);
    CHECK(postRecv(small.b.qp, 2) == 0);
    CHECK(postRecv(small.b.qp, 3) == ENOMEM);
  }
}

TEST_CASE("verbs emu: a CQ overflow breaks the CQ instead of dropping", "[verbs_emu]") {
  SECTION("send CQ") {
    EndpointOptions oa;
    oa.cq_depth = 2;
    Loopback l(oa, {});
    for (int i = 0; i < 3; ++i) REQUIRE(l.write(static_cast<uint64_t>(i), true) == 0);
    ibv_wc wc[4];
    CHECK(ibv_poll_cq(l.a.send_cq, 4, wc) < 0);
    CHECK(ibv_poll_cq(l.a.send_cq, 4, wc) < 0);  // and stays broken
  }
  SECTION("the receiver's CQ, filled by the remote writer") {
    EndpointOptions ob;
    ob.cq_depth = 2;
    Loopback l({}, ob);
    for (int i = 0; i < 3; ++i) REQUIRE(postRecv(l.b.qp, static_cast<uint64_t>(i)) == 0);
    const uint32_t imm = 1;
    for (int i = 0; i < 3; ++i) REQUIRE(l.write(static_cast<uint64_t>(i), true, &imm) == 0);
    ibv_wc wc[4];
    CHECK(ibv_poll_cq(l.b.recv_cq, 4, wc) < 0);
  }
}

TEST_CASE("verbs emu: SEND lands in the posted receive buffer", "[verbs_emu]") {
  Loopback l({}, {});
  REQUIRE(postRecv(l.b.qp, 8, l.dst.data(), 64, l.dst_mr->lkey) == 0);
  char msg[16] = "inline payload";
  ibv_sge sge{reinterpret_cast<uintptr_t>(msg), sizeof(msg), 0};  // inline: no lkey needed
  ibv_send_wr wr{}, *bad = nullptr;
  wr.wr_id = 3;
  wr.sg_list = &sge;
  wr.num_sge = 1;
  wr.opcode = IBV_WR_SEND;
  wr.send_flags = IBV_SEND_SIGNALED | IBV_SEND_INLINE;
  REQUIRE(ibv_post_send(l.a.qp, &wr, &bad) == 0);
  std::memset(msg, 0, sizeof(msg));  // copied at post time
  ibv_wc wc{};
  REQUIRE(pollOne(l.b.recv_cq, &wc, 2));
  CHECK(wc.status == IBV_WC_SUCCESS);
  CHECK(wc.opcode == IBV_WC_RECV);
  CHECK(wc.byte_len == sizeof(msg));
  CHECK((wc.wc_flags & IBV_WC_WITH_IMM) == 0);
  CHECK(std::memcmp(l.dst.data(), "inline payload", 15) == 0);
  REQUIRE(pollOne(l.a.send_cq, &wc, 2));
  CHECK(wc.opcode == IBV_WC_SEND);
  // Too long for the receive buffer: both sides see it.
  REQUIRE(postRecv(l.b.qp, 9, l.dst.data(), 8, l.dst_mr->lkey) == 0);
  ibv_sge big{reinterpret_cast<uintptr_t>(l.src.data()), 64, l.src_mr->lkey};
  wr.sg_list = &big;
  wr.send_flags = IBV_SEND_SIGNALED;
  REQUIRE(ibv_post_send(l.a.qp, &wr, &bad) == 0);
  REQUIRE(pollOne(l.a.send_cq, &wc, 2));
  CHECK(wc.status == IBV_WC_REM_INV_REQ_ERR);
  REQUIRE(pollOne(l.b.recv_cq, &wc, 2));
  CHECK(wc.status == IBV_WC_LOC_LEN_ERR);
}
