// ib_lane.h — one RC queue pair and its completion queue, with the
// bookkeeping the verbs leave to the user: how many send WRs are
// outstanding (posting past max_send_wr is an error), which ones asked for
// a completion (selective signaling: only a signaled completion retires
// the unsignaled WRs before it), and what each signaled WR was.
#pragma once

#include <cstdint>
#include <deque>

#include "ib/verbs_api.h"

namespace coll::ib {

// What a work request was, carried in wr_id's top byte (receives too: a
// failed completion's opcode is undefined, its wr_id is not).
enum class WrKind : uint8_t { Data = 1, Cts = 2, Recv = 3, Notice = 4, Wait = 5, Probe = 6 };
inline uint64_t makeWrId(WrKind k, uint64_t seq) { return (static_cast<uint64_t>(k) << 56) | (seq & ((1ull << 56) - 1)); }
inline WrKind wrKind(uint64_t wrId) { return static_cast<WrKind>(wrId >> 56); }
inline uint64_t wrSeq(uint64_t wrId) { return wrId & ((1ull << 56) - 1); }

// What the protocol cost: the perf tool's counters (perf/ib_protocol_cost).
struct IbCounters {
  uint64_t sendWrs = 0;     // send WRs posted (data, clear-to-send, control)
  uint64_t dataWrs = 0;     // ...of which data writes (one per message)
  uint64_t externalWrs = 0; // ...of which read their payload from registered user memory
  uint64_t recvWrs = 0;     // receive WRs posted
  uint64_t cqes = 0;        // completions polled
  uint64_t polls = 0;       // ibv_poll_cq calls
  uint64_t dataBytes = 0;   // payload written (headers included)
  uint64_t ctrlBytes = 0;   // clear-to-send entries and control messages written
  uint64_t nicBytes[4] = {};  // data written per NIC (rails), by index
};

struct Lane {
  ibv_qp* qp = nullptr;
  ibv_cq* cq = nullptr;
  uint32_t depth = 0;          // max_send_wr
  uint64_t posted = 0;         // send WRs posted
  uint64_t retired = 0;        // send WRs whose slot in the send queue is free again
  uint64_t sinceSignal = 0;    // unsignaled WRs since the last signaled one
  struct Signaled {
    uint64_t position;  // `posted` after it
    uint64_t wrId;
  };
  std::deque<Signaled> signaled;
  bool failed = false;         // a completion with an error came: the QP is in ERR

  bool canPost(uint32_t n = 1) const { return posted - retired + n <= depth; }
  // Whether the next send WR must be signaled so that unsignaled ones
  // cannot fill the send queue.
  bool mustSignal() const { return sinceSignal + 1 >= depth / 2; }
  // Posts one send WR (signaled or not, as wr says); 0 or the errno.
  int postSend(ibv_send_wr& wr, IbCounters& c);
  int postRecv(uint64_t wrId, IbCounters& c);
  // Polls up to n completions into wc; retires send WRs by the signaled
  // ones that completed.  Returns the count, or -1 when the CQ broke.
  int poll(ibv_wc* wc, int n, IbCounters& c);
};

}  // namespace coll::ib
