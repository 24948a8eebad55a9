// The emulator's verbs objects in this process.  Each starts with the verbs
// struct the caller sees (so a caller's ibv_qp* is our EmuQp*) and keeps the
// rest of its state after it.
#pragma once

#include <infiniband/verbs.h>
#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <type_traits>
#include <unordered_map>
#include <vector>

#include "emu_config.h"
#include "registry.h"
#include "ring.h"

namespace coll::verbs_emu {

using Clock = std::chrono::steady_clock;

struct EmuContext {
  ibv_context ctx;
  int nic;
  bool infiniband;
  PortIdentity port;
};

struct EmuPd {
  ibv_pd pd;
  uint64_t id;
  int users;  // MRs and QPs on it: ibv_dealloc_pd fails with EBUSY while > 0
};

struct EmuMr {
  ibv_mr mr;
  uint32_t slot;
};

struct EmuCq {
  ibv_cq cq;
  uint64_t seg;
  std::unique_ptr<Ring> ring;
  int users;  // QPs on it: ibv_destroy_cq fails with EBUSY while > 0
  Clock::time_point next_health_check;
};

// A send WR from post until it has run (it waits here while the receiver is
// not ready, and WRs behind it on the same QP wait too: RC runs in order).
struct PendingWr {
  uint64_t wr_id = 0;
  uint64_t seq = 0;
  ibv_wr_opcode opcode = IBV_WR_RDMA_WRITE;
  bool signaled = false;
  bool is_inline = false;
  uint32_t imm = 0;
  uint64_t remote_addr = 0;
  uint32_t rkey = 0;
  std::vector<ibv_sge> sges;
  std::vector<uint8_t> inline_data;  // IBV_SEND_INLINE: copied at post time
  uint32_t rnr_attempts = 0;
  Clock::time_point not_before{};
};

struct EmuQp {
  ibv_qp qp;
  uint32_t slot;  // registry record
  EmuPd* pd;
  EmuCq* send_cq;
  EmuCq* recv_cq;
  uint64_t rq_seg;
  std::unique_ptr<Ring> rq;
  ibv_qp_cap cap;
  bool sig_all;
  ibv_qp_attr attr;  // the attributes set so far (ibv_query_qp)
  ibv_qp_attr_mask attr_set;
  // Send-queue slots: a WR holds one from post until its completion, or a
  // later signaled one's, is polled (unsignaled WRs free nothing alone).
  uint64_t send_posted;
  uint64_t send_retired;
  std::deque<PendingWr> pending;
  pid_t peer_pid;  // the connected QP's owner, found at RTR (0: not found)
};

static_assert(std::is_standard_layout_v<EmuQp> && std::is_standard_layout_v<EmuCq>,
              "the verbs struct must be at offset 0");

// This process's share of the fabric.  One mutex covers every call: verbs
// objects may be used from several threads, and calls are short.  Lock order:
// Process::mu, then the registry's lock or one ring's lock (never both).
struct Process {
  std::mutex mu;
  Registry* reg = nullptr;
  EmuConfig cfg;
  int contexts = 0;
  pid_t pid = 0;
  std::vector<EmuQp*> qps;
  std::vector<EmuCq*> cqs;
  std::unordered_map<uint64_t, std::unique_ptr<Ring>> remote_rings;
  ~Process();
};

Process& process();
// A ring of another process (or ours), mapped once; nullptr when gone.
Ring* mappedRing(Process& p, uint64_t seg);
EmuQp* localQp(Process& p, uint32_t qpn);

inline EmuContext* emuContext(ibv_context* c) { return reinterpret_cast<EmuContext*>(c); }
inline EmuPd* emuPd(ibv_pd* pd) { return reinterpret_cast<EmuPd*>(pd); }
inline EmuCq* emuCq(ibv_cq* cq) { return reinterpret_cast<EmuCq*>(cq); }
inline EmuQp* emuQp(ibv_qp* qp) { return reinterpret_cast<EmuQp*>(qp); }

}  // namespace coll::verbs_emu
