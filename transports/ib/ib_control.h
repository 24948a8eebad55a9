// ib_control.h — the control QP of one peer: failure notices, wait
// reports (timeout diagnosis) and liveness probes, beside the data QPs.
//
// A notice is one RDMA write WITH_IMM of its text into the peer's control
// block (the immediate says "notice" and the length: the text has landed
// when the receive completes).  A wait report is an immediate alone.  A
// probe is an 8-byte RDMA write the peer's CPU never sees: its completion
// with an error (retry exceeded, flushed) says the peer's QP is gone, which
// is how a rank waiting only to receive learns that its sender died.
#pragma once

#include <cstdint>
#include <string>

#include "coll/transport.h"
#include "ib/ib_lane.h"
#include "ib/ib_wire.h"

namespace coll::ib {

class IbControl final {
 public:
  struct Memory {
    const char* block = nullptr;  // our control block for this peer (it writes here)
    uint64_t peerBlock = 0;       // its control block for us
    uint32_t peerBlockRkey = 0;
    const char* noticeOut = nullptr;  // the registered copy of our notice's text
    uint32_t noticeLkey = 0;
  };
  IbControl(const VerbsApi* api, int peer, std::string nicLabel, Lane* lane, Memory mem, IbCounters* counters);
  Status start();  // posts the receives notices and reports complete
  void progress();
  // Our notice, already copied to mem.noticeOut (bytes long); best effort,
  // waits at most a few hundred ms for it to leave.
  void sendNotice(size_t bytes);
  void sendWait(int waitingFor);
  // A liveness probe if none is out and the last was at least intervalNs ago.
  void probe(int64_t nowNs, int64_t intervalNs);

  int peer() const { return peer_; }
  bool noticed() const { return noticed_; }
  const std::string& noticeText() const { return noticeText_; }
  int waitingFor() const { return waitingFor_; }
  bool gone() const { return gone_; }
  bool notified() const { return notified_; }
  // A protocol error in what the peer sent on this QP ("" if none).
  const std::string& error() const { return error_; }

 private:
  void onCompletion(const ibv_wc& wc);

  const VerbsApi* api_;
  int peer_;
  std::string nic_;
  Lane* lane_;
  Memory mem_;
  IbCounters* counters_;
  bool noticed_ = false;
  std::string noticeText_;
  int waitingFor_ = transport::Transport::kNoWaitReport;
  bool gone_ = false;
  bool notified_ = false;
  bool probeOut_ = false;
  int64_t lastProbeNs_ = 0;
  uint64_t probeWord_ = 0;
  uint64_t recvSeq_ = 0;
  std::string error_;
};

constexpr int kCtrlRecvs = 8;
constexpr int kCtrlSendDepth = 16;

}  // namespace coll::ib
