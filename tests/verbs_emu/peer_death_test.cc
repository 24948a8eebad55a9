// A peer process killed with SIGKILL: the survivor's outstanding WRs
// complete with IBV_WC_WR_FLUSH_ERR and a send to the dead peer with
// IBV_WC_RETRY_EXC_ERR, within a bounded time, whether the survivor only
// polls or posts.
#include <signal.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <vector>

#include "child_process.h"
#include "endpoint.h"
#include "verbs_api.h"

using namespace verbs_emu_test;

namespace {

// A child that connects and then waits to be killed.
int connectAndWait(Channel& ch) {
  Endpoint ep;
  CHILD_CHECK(ep.open());
  Wire theirs;
  CHILD_CHECK(ch.recvValue(&theirs));
  CHILD_CHECK(ch.sendValue(ep.wire()));
  CHILD_CHECK(ep.connect(theirs));
  CHILD_CHECK(ch.sendValue('r'));
  for (;;) pause();
}

double seconds(std::chrono::steady_clock::time_point since) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - since).count();
}

}  // namespace

TEST_CASE("verbs emu: a killed peer flushes the survivor's WRs", "[verbs_emu][mp]") {
  const bool reap = GENERATE(true, false);  // unreaped, the peer is a zombie
  const bool post_first = GENERATE(false, true);
  INFO("reaped " << reap << ", post first " << post_first);
  ChildProcess child(connectAndWait);
  Endpoint ep;
  REQUIRE(ep.open());
  std::vector<uint8_t> src(64, 1);
  ibv_mr* mr = verbs().reg_mr(ep.pd, src.data(), src.size(), IBV_ACCESS_LOCAL_WRITE);
  REQUIRE(mr);
  REQUIRE(child.channel().sendValue(ep.wire()));
  Wire theirs;
  REQUIRE(child.channel().recvValue(&theirs));
  REQUIRE(ep.connect(theirs));
  REQUIRE(postRecv(ep.qp, 100) == 0);
  REQUIRE(postRecv(ep.qp, 101) == 0);
  char ready = 0;
  REQUIRE(child.channel().recvValue(&ready));
  child.kill(SIGKILL);
  if (reap) CHECK(child.wait() == 128 + SIGKILL);
  else usleep(50 * 1000);  // let the kill land
  const auto t0 = std::chrono::steady_clock::now();
  ibv_wc wc{};
  if (post_first) {
    REQUIRE(postWrite(ep.qp, 7, src.data(), 64, mr->lkey, 0x1000, 1, true) == 0);
    REQUIRE(pollOne(ep.send_cq, &wc, 2));
    CHECK(wc.wr_id == 7);
    CHECK(wc.status == IBV_WC_RETRY_EXC_ERR);
  }
  for (uint64_t id : {100, 101}) {
    REQUIRE(pollOne(ep.recv_cq, &wc, 2));
    CHECK(wc.wr_id == id);
    CHECK(wc.status == IBV_WC_WR_FLUSH_ERR);
  }
  CHECK(seconds(t0) < 1.0);
  CHECK(ep.state() == IBV_QPS_ERR);
  // New WRs on the QP in ERR are flushed, signaled or not.
  REQUIRE(postWrite(ep.qp, 8, src.data(), 64, mr->lkey, 0x1000, 1, false) == 0);
  REQUIRE(pollOne(ep.send_cq, &wc, 1));
  CHECK(wc.wr_id == 8);
  CHECK(wc.status == IBV_WC_WR_FLUSH_ERR);
  verbs().dereg_mr(mr);
  ep.close();
}
