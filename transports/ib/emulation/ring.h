// A bounded ring of fixed-size entries in its own shared-memory segment
// (/dev/shm/coll_verbs_emu.<fabric>.<id>).  CQs and receive queues are rings:
// a remote writer pushes receive completions into the target's CQ and takes
// receive WRs from the target's receive queue, so both live where every
// process of the fabric can map them.
#pragma once

#include <infiniband/verbs.h>
#include <pthread.h>

#include <cstdint>
#include <memory>
#include <string>

namespace coll::verbs_emu {

constexpr int kMaxRecvSge = 4;

// A completion as queued: the work completion plus, for send completions,
// the WR's sequence number on its QP (polling it frees send-queue slots).
struct CqEntry {
  ibv_wc wc;
  uint64_t send_seq;
  uint32_t is_send;
  uint32_t pad;
};

// A posted receive WR.
struct RecvEntry {
  uint64_t wr_id;
  uint32_t num_sge;
  uint32_t pad;
  struct {
    uint64_t addr;
    uint32_t length;
    uint32_t lkey;
  } sge[kMaxRecvSge];
};

class Ring {
 public:
  // Creates the segment (the owner); nullptr with errno on failure.
  static std::unique_ptr<Ring> create(const std::string& name, uint32_t capacity, uint32_t entry_size);
  // Maps an existing segment (a remote writer); nullptr with errno.
  static std::unique_ptr<Ring> open(const std::string& name);
  static void unlink(const std::string& name);
  ~Ring();
  Ring(const Ring&) = delete;
  Ring& operator=(const Ring&) = delete;

  // Appends one entry; false when full.  mark_overflow: a full ring is
  // broken from then on (a CQ overflow loses a completion: never silent).
  bool push(const void* entry, bool mark_overflow);
  // Removes up to max entries into out.
  uint32_t pop(void* out, uint32_t max);
  uint32_t size();
  bool overflowed();
  uint32_t capacity() const;

 private:
  struct Header;
  Ring(Header* h, size_t bytes) : h_(h), bytes_(bytes) {}
  uint8_t* slot(uint64_t index) const;
  Header* h_;
  size_t bytes_;
};

}  // namespace coll::verbs_emu
