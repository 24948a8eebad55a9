// Across two processes (fork): the parent is the target of RDMA writes, the
// child the writer.  Data lands only through a valid rkey into a
// REMOTE_WRITE MR, and it is all there when the WITH_IMM completion that
// follows it is polled.
#include <arpa/inet.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cstdio>
#include <cstring>
#include <functional>
#include <vector>

#include "child_process.h"
#include "endpoint.h"
#include "verbs_api.h"

using namespace verbs_emu_test;

namespace {

uint8_t pattern(size_t i) { return static_cast<uint8_t>(i * 7 + 1); }

// The writer's side, as the post function sees it: a source buffer of
// 2 * len bytes (the pattern) whose MR covers only the first len.
struct Writer {
  Endpoint& ep;
  Wire target;
  uint8_t* src;
  ibv_mr* mr;
};

struct TargetView {
  int child_exit = -1;
  int writer_status = -1;  // the writer's completion status (-1: none)
  std::vector<uint8_t> buf;
  bool got_wc = false;
  ibv_wc wc{};  // the target's first receive completion
};

constexpr uint8_t kUntouched = 0xAB;

// The parent registers len bytes of kUntouched with target_access, posts
// one receive, connects to a child writer that runs post and reports the
// status of its first send completion.
TargetView writeFromChild(int target_access, size_t len, const std::function<int(Writer&)>& post) {
  ChildProcess child([&](Channel& ch) {
    Endpoint ep;
    CHILD_CHECK(ep.open());
    Wire target;
    CHILD_CHECK(ch.recvValue(&target));
    CHILD_CHECK(ch.sendValue(ep.wire()));
    CHILD_CHECK(ep.connect(target));
    char go = 0;
    CHILD_CHECK(ch.recvValue(&go));
    std::vector<uint8_t> src(2 * len);
    for (size_t i = 0; i < src.size(); ++i) src[i] = pattern(i);
    ibv_mr* mr = verbs().reg_mr(ep.pd, src.data(), len, IBV_ACCESS_LOCAL_WRITE);
    CHILD_CHECK(mr);
    Writer w{ep, target, src.data(), mr};
    const int rc = post(w);
    ibv_wc wc{};
    int status = -1;
    if (rc == 0 && pollOne(ep.send_cq, &wc, 10)) status = wc.status;
    CHILD_CHECK(ch.sendValue(status));
    char done = 0;
    CHILD_CHECK(ch.recvValue(&done));  // the target has looked
    verbs().dereg_mr(mr);
    ep.close();
    return rc == 0 ? 0 : 2;
  });
  TargetView v;
  v.buf.assign(len, kUntouched);
  Endpoint ep;
  REQUIRE(ep.open());
  ibv_mr* mr = verbs().reg_mr(ep.pd, v.buf.data(), len, target_access);
  REQUIRE(mr);
  Wire mine = ep.wire();
  mine.addr = reinterpret_cast<uintptr_t>(v.buf.data());
  mine.rkey = mr->rkey;
  mine.len = static_cast<uint32_t>(len);
  Wire theirs;
  REQUIRE(child.channel().sendValue(mine));
  REQUIRE(child.channel().recvValue(&theirs));
  REQUIRE(ep.connect(theirs));
  REQUIRE(postRecv(ep.qp, 77) == 0);  // receives from INIT on
  REQUIRE(child.channel().sendValue('g'));
  REQUIRE(child.channel().recvValue(&v.writer_status));
  v.got_wc = pollOne(ep.recv_cq, &v.wc, 1);
  REQUIRE(child.channel().sendValue('d'));
  v.child_exit = child.wait();
  verbs().dereg_mr(mr);
  ep.close();
  return v;
}

bool untouched(const std::vector<uint8_t>& buf) {
  for (uint8_t b : buf)
    if (b != kUntouched) return false;
  return true;
}

constexpr int kTargetAccess = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE;

}  // namespace

TEST_CASE("verbs emu: writes are in place when the later WITH_IMM completes", "[verbs_emu][mp]") {
  constexpr size_t kBulk = 4 << 20;
  constexpr size_t kLen = kBulk + 64;
  TargetView v = writeFromChild(kTargetAccess, kLen, [&](Writer& w) {
    // 4 MiB unsignaled, then 64 bytes WITH_IMM signaled: one chain.
    ibv_sge sge[2] = {{reinterpret_cast<uintptr_t>(w.src), kBulk, w.mr->lkey},
                      {reinterpret_cast<uintptr_t>(w.src + kBulk), 64, w.mr->lkey}};
    ibv_send_wr wr[2]{};
    wr[0].wr_id = 1;
    wr[0].sg_list = &sge[0];
    wr[0].num_sge = 1;
    wr[0].opcode = IBV_WR_RDMA_WRITE;
    wr[0].wr.rdma = {w.target.addr, w.target.rkey};
    wr[0].next = &wr[1];
    wr[1].wr_id = 2;
    wr[1].sg_list = &sge[1];
    wr[1].num_sge = 1;
    wr[1].opcode = IBV_WR_RDMA_WRITE_WITH_IMM;
    wr[1].send_flags = IBV_SEND_SIGNALED;
    wr[1].imm_data = htonl(0x1234);
    wr[1].wr.rdma = {w.target.addr + kBulk, w.target.rkey};
    ibv_send_wr* bad = nullptr;
    return ibv_post_send(w.ep.qp, wr, &bad);
  });
  CHECK(v.child_exit == 0);
  CHECK(v.writer_status == IBV_WC_SUCCESS);
  REQUIRE(v.got_wc);
  CHECK(v.wc.status == IBV_WC_SUCCESS);
  CHECK(v.wc.opcode == IBV_WC_RECV_RDMA_WITH_IMM);
  CHECK(v.wc.wr_id == 77);
  CHECK((v.wc.wc_flags & IBV_WC_WITH_IMM) != 0);
  CHECK(ntohl(v.wc.imm_data) == 0x1234);
  CHECK(v.wc.byte_len == 64);
  size_t wrong = 0;
  for (size_t i = 0; i < kLen; ++i) wrong += v.buf[i] != pattern(i);
  CHECK(wrong == 0);
}

TEST_CASE("verbs emu: a bad rkey or range writes nothing and is IBV_WC_REM_ACCESS_ERR", "[verbs_emu][mp]") {
  constexpr size_t kLen = 4096;
  std::function<int(Writer&)> post;
  int access = kTargetAccess;
  SECTION("wrong rkey") {
    post = [](Writer& w) {
      return postWrite(w.ep.qp, 1, w.src, kLen, w.mr->lkey, w.target.addr, w.target.rkey ^ (1u << 20), true);
    };
  }
  SECTION("an lkey sent as the rkey") {
    post = [](Writer& w) {
      return postWrite(w.ep.qp, 1, w.src, kLen, w.mr->lkey, w.target.addr, w.mr->lkey, true);
    };
  }
  SECTION("past the end of the MR") {
    post = [](Writer& w) {
      return postWrite(w.ep.qp, 1, w.src, kLen, w.mr->lkey, w.target.addr + 8, w.target.rkey, true);
    };
  }
  SECTION("an MR without IBV_ACCESS_REMOTE_WRITE") {
    access = IBV_ACCESS_LOCAL_WRITE;
    post = [](Writer& w) {
      return postWrite(w.ep.qp, 1, w.src, kLen, w.mr->lkey, w.target.addr, w.target.rkey, true);
    };
  }
  TargetView v = writeFromChild(access, kLen, post);
  CHECK(v.child_exit == 0);
  CHECK(v.writer_status == IBV_WC_REM_ACCESS_ERR);
  CHECK(untouched(v.buf));
  // The responder's QP went to ERR too: its receive is flushed.
  REQUIRE(v.got_wc);
  CHECK(v.wc.status == IBV_WC_WR_FLUSH_ERR);
}

TEST_CASE("verbs emu: a local buffer outside its MR is IBV_WC_LOC_PROT_ERR", "[verbs_emu][mp]") {
  constexpr size_t kLen = 4096;
  SECTION("past the MR") {
    TargetView v = writeFromChild(kTargetAccess, kLen, [](Writer& w) {
      return postWrite(w.ep.qp, 1, w.src + kLen, kLen, w.mr->lkey, w.target.addr, w.target.rkey, true);
    });
    CHECK(v.writer_status == IBV_WC_LOC_PROT_ERR);
    CHECK(untouched(v.buf));
  }
  SECTION("an rkey sent as the lkey") {
    TargetView v = writeFromChild(kTargetAccess, kLen, [](Writer& w) {
      return postWrite(w.ep.qp, 1, w.src, kLen, w.mr->rkey, w.target.addr, w.target.rkey, true);
    });
    CHECK(v.writer_status == IBV_WC_LOC_PROT_ERR);
    CHECK(untouched(v.buf));
  }
}
