// socket_transport.h — ranks talk over TCP (other hosts, or this one when
// COLL_TRANSPORT=socket).
//
// Setup: every rank listens on its chosen interface (net/interfaces.h), the
// addresses go round the bootstrap, and the lower rank of each pair
// connects: one control connection (failure notices) plus nchannels x
// nstreams data connections.  Every connection starts with a ConnHello
// both ways that proves the job secret (socket_wire.h); strangers and bad
// hellos are dropped and logged.  The listener closes when setup ends.
//
// Death: a peer whose connection reports EOF or reset is gone (its kernel
// closes its sockets when it dies, also on kill -9); the control connection
// carries a failure notice when it failed knowingly.
#pragma once

#include <poll.h>

#include <memory>
#include <vector>

#include "coll/transport.h"
#include "coll/base/interfaces.h"
#include "coll/base/socket.h"
#include "socket_conn.h"

namespace coll::sock {

// What the socket transport is given (core reads the settings: COLL_SOCKET_*).
struct SocketOptions {
  net::Interface interface;
  int nstreams = 1;               // TCP connections per peer and channel, 1..kMaxStreams
  size_t bufferBytes = 4u << 20;  // SO_SNDBUF / SO_RCVBUF; 0 leaves the kernel's autotuning
};
constexpr int kMaxStreams = 16;

class SocketTransport final : public transport::Transport {
 public:
  explicit SocketTransport(SocketOptions opt);
  ~SocketTransport() override;

  const char* name() const override { return "socket"; }
  transport::LinkCost cost() const override;
  Status connect(transport::Exchange& ex, int rank, const std::vector<transport::PeerInfo>& all,
                 const std::vector<int>& peers, const transport::ConnectOptions& opt) override;
  transport::SendConn* sendConn(int channel, int peer) override;
  transport::RecvConn* recvConn(int channel, int peer) override;
  Status checkPeers() override;
  const std::vector<int>& deadPeers() override;
  bool sendsInFlight() override;
  void settleSends() override;
  void notifyPeers(const std::string& why) override;
  void reportWait(int waitingFor) override;
  void waitReports(std::vector<int>& byRank) override;
  uint32_t prepareToSleep() override { return 0; }
  void sleep(uint32_t token, int64_t maxNs) override;
  void cancelSleep() override {}
  void wake() override;

  // For a transport that combines this one with shm: the descriptors a
  // sleeper must watch (data it can take, frames waiting to leave, notices).
  void collectPollFds(std::vector<pollfd>& out) const;
  // Reads whatever has arrived into free slots of every connection; true
  // when a frame became complete.
  bool drainReceives();

 private:
  struct Peer {
    PeerLink link;
    net::Socket control;
    std::vector<char> notice;  // control frame being read
    int waitingFor = transport::Transport::kNoWaitReport;  // its wait report
    bool noticed = false;
    bool controlClosed = false;  // EOF or error on the control connection
    std::string noticeText;
    bool notified = false;     // we sent ours
  };
  Status establish(transport::Exchange& ex, const std::vector<transport::PeerInfo>& all,
                   const std::vector<int>& peers);
  void readControl(Peer& p);
  void sendControl(Peer& p, const std::vector<char>& frame);

  SocketOptions sopt_;
  transport::ConnectOptions opt_;
  int rank_ = -1;
  int nranks_ = 0;
  int wakeFd_ = -1;  // eventfd: wake() from another thread
  std::vector<std::unique_ptr<Peer>> peers_;
  std::vector<int> peerIndex_;       // rank -> index in peers_, or -1
  std::vector<net::Socket> dataSockets_;  // owns every data connection
  SendSet sendSet_;
  std::vector<std::unique_ptr<SocketSendConn>> send_;  // [channel * npeers + index]
  std::vector<std::unique_ptr<SocketRecvConn>> recv_;
  std::vector<int> dead_;
};

}  // namespace coll::sock
