// mixed_transport.h — shared memory to ranks on this host, a network
// transport (TCP or InfiniBand) to the rest.
//
// Routes every connection by peer.  Sleeping cannot wait on a futex and
// the network at once, so a sleeper sleeps on the network part in short
// naps (200 us) and looks at its shared-memory FIFOs between them.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "shm/shm_transport.h"

namespace coll::mixed {

class MixedTransport final : public transport::Transport {
 public:
  MixedTransport(std::unique_ptr<shm::ShmTransport> shm, std::unique_ptr<transport::Transport> net)
      : shm_(std::move(shm)), net_(std::move(net)), name_(std::string("shm+") + net_->name()) {}

  const char* name() const override { return name_.c_str(); }
  // The slowest link sets the pace of a collective.
  transport::LinkCost cost() const override { return net_->cost(); }
  // `peers` holds both kinds; localPeers tells which go over shm.  Both
  // parts connect on every rank (possibly to nobody), so every rank makes
  // the same bootstrap rounds.
  Status connectParts(transport::Exchange& ex, int rank, const std::vector<transport::PeerInfo>& all,
                      const std::vector<int>& localPeers, const std::vector<int>& remotePeers,
                      const transport::ConnectOptions& opt);
  Status connect(transport::Exchange&, int, const std::vector<transport::PeerInfo>&, const std::vector<int>&,
                 const transport::ConnectOptions&) override;
  transport::SendConn* sendConn(int channel, int peer) override;
  transport::RecvConn* recvConn(int channel, int peer) override;
  Status checkPeers() override;
  const std::vector<int>& deadPeers() override;
  bool sendsInFlight() override { return net_->sendsInFlight(); }
  void settleSends() override { net_->settleSends(); }
  void notifyPeers(const std::string& why) override;
  void reportWait(int waitingFor) override {
    shm_->reportWait(waitingFor);
    net_->reportWait(waitingFor);
  }
  void waitReports(std::vector<int>& byRank) override {
    shm_->waitReports(byRank);
    net_->waitReports(byRank);
  }
  uint32_t prepareToSleep() override { return 0; }
  void sleep(uint32_t token, int64_t maxNs) override;
  void cancelSleep() override {}
  void wake() override;
  Status registerBuffer(const void* p, size_t bytes) override { return net_->registerBuffer(p, bytes); }
  void deregisterBuffer(const void* p) override { net_->deregisterBuffer(p); }

 private:
  std::unique_ptr<shm::ShmTransport> shm_;
  std::unique_ptr<transport::Transport> net_;  // the network part
  std::string name_;
  std::vector<uint8_t> viaShm_;  // per rank
  std::vector<int> dead_;
};

}  // namespace coll::mixed
