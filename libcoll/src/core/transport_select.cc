#include "core/transport_select.h"

#include <algorithm>

#include "coll/base/interfaces.h"
#include "coll/base/settings.h"
#include "mixed/mixed_transport.h"
#include "shm/shm_transport.h"
#include "socket/socket_transport.h"

namespace coll::core {

Result<TransportMode> transportModeFromEnv() {
  auto v = settings::choiceOr("COLL_TRANSPORT");
  COLL_CHECK(v.status());
  if (v.value() == "shm") return TransportMode::Shm;
  if (v.value() == "socket") return TransportMode::Socket;
  return TransportMode::Auto;
}

namespace {

// COLL_SOCKET_NSTREAMS, COLL_SOCKET_BUFSIZE and the interface, for the
// socket transport.  allLocal: every rank is on this host (loopback by default).
Result<sock::SocketOptions> socketOptions(bool allLocal) {
  sock::SocketOptions o;
  auto streams = settings::intOr("COLL_SOCKET_NSTREAMS");
  COLL_CHECK(streams.status());
  o.nstreams = static_cast<int>(std::min<long long>(streams.value(), sock::kMaxStreams));
  auto buf = settings::bytesOr("COLL_SOCKET_BUFSIZE");
  COLL_CHECK(buf.status());
  o.bufferBytes = buf.value();
  auto itf = net::chooseInterfaceFromEnv(allLocal);
  COLL_CHECK(itf.status());
  o.interface = itf.take();
  return o;
}

}  // namespace

const char* transportModeName(TransportMode m) {
  switch (m) {
    case TransportMode::Shm: return "shm";
    case TransportMode::Socket: return "socket";
    default: return "auto";
  }
}

Result<Connected> connectTransports(transport::Exchange& ex, int rank, const std::vector<transport::PeerInfo>& all,
                                    TransportMode mode, const transport::ConnectOptions& opt) {
  const uint64_t myHost = all[rank].hostHash;
  std::vector<int> localPeers, remotePeers;
  bool anyPairLocal = false, anyPairRemote = false;
  for (size_t a = 0; a < all.size(); ++a)
    for (size_t b = a + 1; b < all.size(); ++b) (all[a].hostHash == all[b].hostHash ? anyPairLocal : anyPairRemote) = true;
  Connected out;
  for (const auto& p : all) {
    if (p.rank == rank) continue;
    if (p.hostHash == myHost) {
      ++out.localRanks;
      (mode == TransportMode::Socket ? remotePeers : localPeers).push_back(p.rank);
    } else {
      out.allLocal = false;
      remotePeers.push_back(p.rank);
    }
  }
  if (mode == TransportMode::Shm && anyPairRemote) {
    for (const auto& p : all)
      if (p.hostHash != all[0].hostHash)
        return makeError(collInvalidUsage,
                         "COLL_TRANSPORT=shm, but rank {} is on another host than rank 0: shared memory cannot reach it "
                         "(unset COLL_TRANSPORT to use sockets across hosts)",
                         p.rank);
  }
  const bool useShm = mode != TransportMode::Socket && anyPairLocal;
  const bool useSocket = mode == TransportMode::Socket || anyPairRemote;
  std::unique_ptr<sock::SocketTransport> socket;
  if (useSocket) {
    auto so = socketOptions(!anyPairRemote);
    // Still meet the others in their rounds would need our address; failing
    // here fails every rank's init at the same point (a bad
    // COLL_SOCKET_IFNAME is normally set on every rank alike).
    COLL_CHECK(so.status());
    socket = std::make_unique<sock::SocketTransport>(so.take());
  }
  if (useShm && useSocket) {
    auto shm = std::make_unique<shm::ShmTransport>();
    auto mixed = std::make_unique<mixed::MixedTransport>(std::move(shm), std::move(socket));
    COLL_CHECK(mixed->connectParts(ex, rank, all, localPeers, remotePeers, opt));
    out.transport = std::move(mixed);
  } else if (useSocket) {
    COLL_CHECK(socket->connect(ex, rank, all, remotePeers, opt));
    out.transport = std::move(socket);
  } else {
    auto shm = std::make_unique<shm::ShmTransport>();
    COLL_CHECK(shm->connect(ex, rank, all, localPeers, opt));
    out.transport = std::move(shm);
  }
  return out;
}

}  // namespace coll::core
