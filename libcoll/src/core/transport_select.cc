#include "core/transport_select.h"

#include "mixed/mixed_transport.h"
#include "shm/shm_transport.h"
#include "socket/socket_transport.h"
#include "coll/base/env.h"

namespace coll::core {

Result<TransportMode> transportModeFromEnv() {
  auto v = env::get("COLL_TRANSPORT");
  if (!v || *v == "auto" || v->empty()) return TransportMode::Auto;
  if (*v == "shm") return TransportMode::Shm;
  if (*v == "socket") return TransportMode::Socket;
  return makeError(collInvalidArgument, "COLL_TRANSPORT='{}' must be auto, shm or socket", *v);
}

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
    auto so = sock::socketOptionsFromEnv(!anyPairRemote);
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
