#include "mixed_transport.h"

#include <algorithm>

namespace coll::mixed {

Status MixedTransport::connectParts(transport::Exchange& ex, int rank, const std::vector<transport::PeerInfo>& all,
                                    const std::vector<int>& localPeers, const std::vector<int>& remotePeers,
                                    const transport::ConnectOptions& opt) {
  viaShm_.assign(all.size(), 0);
  for (int p : localPeers) viaShm_[p] = 1;
  COLL_CHECK(shm_->connect(ex, rank, all, localPeers, opt));
  return net_->connect(ex, rank, all, remotePeers, opt);
}

Status MixedTransport::connect(transport::Exchange&, int, const std::vector<transport::PeerInfo>&,
                               const std::vector<int>&, const transport::ConnectOptions&) {
  return makeError(collInternalError, "MixedTransport::connect: use connectParts (it needs to know which peers are local)");
}

transport::SendConn* MixedTransport::sendConn(int channel, int peer) {
  if (peer < 0 || peer >= static_cast<int>(viaShm_.size())) return nullptr;
  return viaShm_[peer] ? shm_->sendConn(channel, peer) : net_->sendConn(channel, peer);
}

transport::RecvConn* MixedTransport::recvConn(int channel, int peer) {
  if (peer < 0 || peer >= static_cast<int>(viaShm_.size())) return nullptr;
  return viaShm_[peer] ? shm_->recvConn(channel, peer) : net_->recvConn(channel, peer);
}

Status MixedTransport::checkPeers() {
  COLL_CHECK(shm_->checkPeers());
  return net_->checkPeers();
}

const std::vector<int>& MixedTransport::deadPeers() {
  dead_ = shm_->deadPeers();
  const auto& more = net_->deadPeers();
  dead_.insert(dead_.end(), more.begin(), more.end());
  return dead_;
}

void MixedTransport::notifyPeers(const std::string& why) {
  shm_->notifyPeers(why);
  net_->notifyPeers(why);
}

void MixedTransport::sleep(uint32_t, int64_t maxNs) { net_->sleep(0, std::min<int64_t>(maxNs, 200'000)); }

void MixedTransport::wake() {
  shm_->wake();
  net_->wake();
}

}  // namespace coll::mixed
