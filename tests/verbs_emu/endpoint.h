// One side of an RC connection over the emulator: device, PD, CQs, QP, and
// the steps RESET -> INIT -> RTR -> RTS with the attributes verbs requires.
#pragma once

#include <infiniband/verbs.h>

#include <cstdint>

namespace verbs_emu_test {

// What two sides exchange (over a pipe between processes).
struct Wire {
  uint32_t qpn = 0;
  uint8_t gid[16] = {};
  uint64_t addr = 0;
  uint32_t rkey = 0;
  uint32_t len = 0;
};

struct EndpointOptions {
  int nic = 0;
  int cq_depth = 64;
  uint32_t max_send_wr = 64;
  uint32_t max_recv_wr = 64;
  uint32_t max_inline = 64;
  int qp_access = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE;
  uint8_t min_rnr_timer = 1;  // 10 us
  uint8_t rnr_retry = 7;      // for ever
};

struct Endpoint {
  ibv_context* ctx = nullptr;
  ibv_pd* pd = nullptr;
  ibv_cq* send_cq = nullptr;
  ibv_cq* recv_cq = nullptr;
  ibv_qp* qp = nullptr;
  EndpointOptions opt;

  bool open(const EndpointOptions& o = {});
  void close();
  Wire wire() const;  // QPN and GID 1 (RoCE v2)
  int toInit();
  int toRtr(const Wire& peer);
  int toRts();
  bool connect(const Wire& peer) { return toInit() == 0 && toRtr(peer) == 0 && toRts() == 0; }
  ibv_qp_state state() const;
};

// Polls cq until one completion arrives (true), the poll fails or the time
// is up (false; *rc holds the last poll's result).
bool pollOne(ibv_cq* cq, ibv_wc* wc, double seconds, int* rc = nullptr);
// Posts one RDMA write (or WITH_IMM when imm is set) of [local, local+len).
int postWrite(ibv_qp* qp, uint64_t wr_id, const void* local, uint32_t len, uint32_t lkey, uint64_t remote,
              uint32_t rkey, bool signaled, const uint32_t* imm = nullptr);
int postRecv(ibv_qp* qp, uint64_t wr_id, void* buf = nullptr, uint32_t len = 0, uint32_t lkey = 0);

}  // namespace verbs_emu_test
