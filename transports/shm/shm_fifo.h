// shm_fifo.h — a single-producer single-consumer FIFO of slots in shared
// memory, and the SendConn/RecvConn that use it.
//
//   FifoCtrl (256 B)                         slots (nslots x slotBytes)
//   | tail (sender) | head (receiver) | sizes[16] |  slot 0 | slot 1 | ...
//
// Sender: wait until tail - head < nslots, fill slot tail % nslots, write
// sizes[], then tail += 1 (release).  Receiver: tail > head (acquire), read,
// head += 1 (release).  tail and head live on separate cache lines, and each
// side caches the other's counter so a poll of a non-empty FIFO touches one
// line only.  The FIFO lives in the receiver's segment.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>

#include "coll/transport.h"
#include "shm_doorbell.h"

namespace coll::shm {

constexpr int kMaxSlots = 16;

struct alignas(64) FifoCtrl {
  alignas(64) std::atomic<uint64_t> tail;
  alignas(64) std::atomic<uint64_t> head;
  alignas(64) uint64_t sizes[kMaxSlots];
};
static_assert(sizeof(FifoCtrl) == 256);
static_assert(std::atomic<uint64_t>::is_always_lock_free);

inline size_t fifoBytes(int nslots, size_t slotBytes) { return sizeof(FifoCtrl) + nslots * slotBytes; }

// `receiver` is the control page of the segment the FIFO lives in: a post
// wakes its owner if it sleeps.
class ShmSendConn final : public transport::SendConn {
 public:
  ShmSendConn(char* fifo, int nslots, size_t slotBytes, SegmentHeader* receiver)
      : ctrl_(reinterpret_cast<FifoCtrl*>(fifo)), slots_(fifo + sizeof(FifoCtrl)),
        nslots_(nslots), slotBytes_(slotBytes), receiver_(receiver) {}

  void* tryAcquire() override {
    if (tail_ - headCache_ >= static_cast<uint64_t>(nslots_)) {
      headCache_ = ctrl_->head.load(std::memory_order_acquire);
      if (tail_ - headCache_ >= static_cast<uint64_t>(nslots_)) return nullptr;
    }
    return slots_ + (tail_ % nslots_) * slotBytes_;
  }
  void post(size_t bytes) override {
    ctrl_->sizes[tail_ % nslots_] = bytes;
    ++tail_;
    publishAndRing(ctrl_->tail, tail_, receiver_);
  }
  size_t slotBytes() const override { return slotBytes_; }

 private:
  FifoCtrl* ctrl_;
  char* slots_;
  int nslots_;
  size_t slotBytes_;
  SegmentHeader* receiver_;
  uint64_t tail_ = 0;       // our own counter (we are the only writer)
  uint64_t headCache_ = 0;  // last head we read
};

// `sender` is the control page of the sender's segment: freeing a slot
// wakes a sender that sleeps on a full FIFO.
class ShmRecvConn final : public transport::RecvConn {
 public:
  ShmRecvConn(char* fifo, int nslots, size_t slotBytes, SegmentHeader* sender)
      : ctrl_(reinterpret_cast<FifoCtrl*>(fifo)), slots_(fifo + sizeof(FifoCtrl)),
        nslots_(nslots), slotBytes_(slotBytes), sender_(sender) {}

  const void* tryPeek(size_t* bytes) override {
    if (tailCache_ == head_) {
      tailCache_ = ctrl_->tail.load(std::memory_order_acquire);
      if (tailCache_ == head_) return nullptr;
    }
    size_t i = head_ % nslots_;
    *bytes = ctrl_->sizes[i];
    return slots_ + i * slotBytes_;
  }
  void release() override {
    ++head_;
    publishAndRing(ctrl_->head, head_, sender_);
  }

 private:
  FifoCtrl* ctrl_;
  char* slots_;
  int nslots_;
  size_t slotBytes_;
  SegmentHeader* sender_;
  uint64_t head_ = 0;
  uint64_t tailCache_ = 0;
};

}  // namespace coll::shm
