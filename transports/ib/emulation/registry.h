// The fabric's shared registry: one file /dev/shm/coll_verbs_emu.<fabric>
// that every process of the emulated fabric maps.  It holds who is alive
// (pids), every MR (so a writer checks an rkey against the TARGET's table),
// every QP (found by QPN + GID or LID, its state and connection) and every
// ring segment (so segments of dead processes can be removed).
//
// Keys index their slot, so a look-up is O(1): rkey/lkey = generation << 14 |
// l-bit << 13 | slot, QPN = generation << 11 | slot.  lkey != rkey on purpose:
// a transport that sends an lkey as rkey gets IBV_WC_REM_ACCESS_ERR.
#pragma once

#include <pthread.h>
#include <sys/types.h>

#include <cstdint>
#include <string>

#include "emu_config.h"

namespace coll::verbs_emu {

constexpr uint32_t kMaxProcs = 256;
constexpr uint32_t kMrSlotBits = 13;
constexpr uint32_t kMaxMrs = 1u << kMrSlotBits;
constexpr uint32_t kQpSlotBits = 11;
constexpr uint32_t kMaxQps = 1u << kQpSlotBits;
constexpr uint32_t kMaxSegs = 4096;

struct ProcRec {
  uint32_t live;
  int32_t pid;
};

struct MrRec {
  uint32_t live;
  int32_t pid;
  uint64_t pd;
  uint64_t addr;
  uint64_t length;
  int32_t access;
  uint32_t lkey;
  uint32_t rkey;
  uint32_t pad;
};

struct QpRec {
  uint32_t live;
  int32_t pid;
  uint32_t qpn;
  uint32_t state;  // enum ibv_qp_state; a remote responder error sets IBV_QPS_ERR
  uint64_t pd;
  uint8_t gids[kGidCount][16];
  uint16_t lid;
  uint8_t min_rnr_timer;
  uint8_t dest_is_global;
  int32_t access_flags;
  uint32_t dest_qpn;
  uint16_t dest_lid;
  uint16_t pad;
  uint8_t dest_gid[16];
  uint64_t rq_seg;       // the receive queue's ring
  uint64_t recv_cq_seg;  // the receive CQ's ring
};

struct SegRec {
  uint32_t live;
  int32_t pid;
  uint64_t id;
};

struct RegistryData {
  uint64_t magic;
  uint64_t size;
  pthread_mutex_t lock;
  uint64_t next_id;  // PDs and segments: never reused
  uint32_t generation;
  uint32_t pad;
  ProcRec procs[kMaxProcs];
  MrRec mrs[kMaxMrs];
  QpRec qps[kMaxQps];
  SegRec segs[kMaxSegs];
};

class Registry {
 public:
  // Maps the fabric's registry (creating it) and records this pid; nullptr
  // with errno on failure.
  static Registry* join(const std::string& fabric);
  // Removes this process's records and segments, sweeps those of dead
  // processes, and removes the file when no live process is left; deletes this.
  void leave();

  // Everything below needs lock() held (a RobustLock on data()->lock).
  RegistryData* data() const { return d_; }
  pthread_mutex_t* mutex() const { return &d_->lock; }
  std::string segName(uint64_t id) const;
  uint64_t newId() { return ++d_->next_id; }

  // allocMr and allocQp return a slot that is not live yet: the caller
  // fills it and sets live before releasing the lock, or another process
  // may take the same slot.
  MrRec* allocMr(uint32_t* slot);  // lkey/rkey filled; nullptr when full
  MrRec* mrByKey(uint32_t key, bool is_lkey);
  QpRec* allocQp(uint32_t* slot);  // qpn filled; nullptr when full
  QpRec* qpByNum(uint32_t qpn);
  bool addSeg(uint64_t id, pid_t pid);
  void freeSeg(uint64_t id);  // unlinks the segment too

 private:
  Registry(RegistryData* d, int fd, std::string fabric) : d_(d), fd_(fd), fabric_(std::move(fabric)) {}
  void sweep(bool everything);
  uint32_t nextGeneration();
  RegistryData* d_;
  int fd_;
  std::string fabric_;
};

// A process is gone when it no longer exists or is a zombie (a killed
// child its parent has not reaped yet still answers kill(pid, 0)).
bool processAlive(pid_t pid);

}  // namespace coll::verbs_emu
