// shm_transport.h — ranks on one machine talk through shared memory.
//
// Each rank owns one segment holding every FIFO it receives on (one per
// channel and peer) plus a control page where peers post failure notices.
// Senders attach to their receivers' segments and write into them.  Cost:
// a hop is a cache-line handoff (~0.3 us); bandwidth is a memory copy.
#pragma once

#include <memory>
#include <vector>

#include "coll/transport.h"
#include "shm_fifo.h"
#include "shm_segment.h"

namespace coll::shm {

class ShmTransport final : public transport::Transport {
 public:
  ShmTransport() = default;
  ~ShmTransport() override;

  const char* name() const override { return "shm"; }
  transport::LinkCost cost() const override;
  Status connect(transport::Exchange& ex, int rank, const std::vector<transport::PeerInfo>& all,
                 const std::vector<int>& peers, const transport::ConnectOptions& opt) override;
  transport::SendConn* sendConn(int channel, int peer) override;
  transport::RecvConn* recvConn(int channel, int peer) override;
  Status checkPeers() override;
  const std::vector<int>& deadPeers() override;
  // post() writes into the receiver's own segment: nothing waits here.
  bool sendsInFlight() override { return false; }
  void notifyPeers(const std::string& why) override;
  void reportWait(int waitingFor) override;
  void waitReports(std::vector<int>& byRank) override;
  uint32_t prepareToSleep() override;
  void sleep(uint32_t seen, int64_t maxNs) override;
  void cancelSleep() override;
  void wake() override;
  // Every rank's board lives in its segment's control page; only when this
  // transport reaches every rank of the communicator.
  transport::Board* board(int rank) override;

 private:
  struct Peer {
    int rank;
    int pid;
    Segment segment;  // the peer's segment (we send into it)
  };
  size_t fifoOffset(int channel, int senderIndex) const;

  int rank_ = -1;
  int nranks_ = 0;
  transport::ConnectOptions opt_;
  Segment own_;
  std::vector<Peer> peers_;
  std::vector<int> peerIndex_;  // rank -> index in peers_, or -1
  std::vector<std::unique_ptr<ShmSendConn>> send_;  // [channel * npeers + index]
  std::vector<std::unique_ptr<ShmRecvConn>> recv_;
  int64_t lastPidCheckNs_ = 0;
  std::vector<int> dead_;
  std::vector<int> meInTheirs_;  // per peer: our index among that peer's peers
};

}  // namespace coll::shm
