#include "core/transport_select.h"

#include <algorithm>
#include <cstring>

#include "coll/base/interfaces.h"
#include "coll/base/log.h"
#include "coll/base/settings.h"
#include "mixed/mixed_transport.h"
#include "shm/shm_transport.h"
#include "socket/socket_transport.h"
#if COLL_HAVE_IBVERBS
#include "ib/ib_settings.h"
#include "ib/ib_transport.h"
#endif

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

// COLL_NET: whether the IB transport carries the network part.  Every rank
// reaches the same answer: the condition for the extra round is the same
// on all (agreed settings, the shared host table), and the round itself
// tells each rank whether every rank has a usable port.
struct NetChoice {
  bool ib = false;
  bool ibOnThisHostToo = false;  // COLL_NET=ib: local peers over IB as well
#if COLL_HAVE_IBVERBS
  ib::IbSettings settings;
#endif
};

Result<NetChoice> chooseNet(transport::Exchange& ex, int rank, const std::vector<transport::PeerInfo>& all,
                            TransportMode mode, bool anyPairRemote) {
  NetChoice out;
  auto net = settings::choiceOr("COLL_NET");
  COLL_CHECK(net.status());
  const bool forced = net.value() == "ib";
  if (net.value() == "socket" || (!forced && !anyPairRemote)) return out;
  if (forced && mode != TransportMode::Auto)
    return makeError(collInvalidUsage, "COLL_NET=ib and COLL_TRANSPORT={} contradict each other: unset one",
                     transportModeName(mode));
  if (mode == TransportMode::Socket) return out;
#if COLL_HAVE_IBVERBS
  auto s = ib::ibSettingsFromTable();
  COLL_CHECK(s.status());
  out.settings = s.take();
  std::string why;
  const int32_t ports = ib::countUsablePorts(out.settings, &why);
  std::vector<char> table;
  COLL_CHECK(ex.allGather(&ports, sizeof(ports), table));
  std::string without;
  for (size_t r = 0; r < all.size(); ++r) {
    int32_t p;
    memcpy(&p, table.data() + r * sizeof(p), sizeof(p));
    if (p <= 0) without += fmt::format("{}{}", without.empty() ? "" : ", ", r);
  }
  if (!without.empty()) {
    if (forced)
      return makeError(collInvalidUsage, "COLL_NET=ib, but rank(s) {} have no usable RDMA port{}", without,
                       ports <= 0 ? fmt::format(" (this rank: {})", why) : std::string());
    COLL_LOG(Info, kNet, rank, "network between hosts: socket (rank(s) {} have no usable RDMA port{})", without,
             ports <= 0 ? fmt::format("; this rank: {}", why) : std::string());
    return out;
  }
  out.ib = true;
  out.ibOnThisHostToo = forced;
  COLL_LOG(Info, kNet, rank, "network between hosts: ib ({}every rank has an active RDMA port)",
           forced ? "COLL_NET=ib; " : "");
  return out;
#else
  (void)ex;
  (void)rank;
  (void)all;
  if (forced)
    return makeError(collInvalidUsage,
                     "COLL_NET=ib, but this libcoll was built without infiniband/verbs.h (install rdma-core's "
                     "libibverbs-dev and rebuild)");
  return out;
#endif
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
  bool anyPairLocal = false, anyPairRemote = false;
  for (size_t a = 0; a < all.size(); ++a)
    for (size_t b = a + 1; b < all.size(); ++b) (all[a].hostHash == all[b].hostHash ? anyPairLocal : anyPairRemote) = true;
  if (mode == TransportMode::Shm && anyPairRemote) {
    for (const auto& p : all)
      if (p.hostHash != all[0].hostHash)
        return makeError(collInvalidUsage,
                         "COLL_TRANSPORT=shm, but rank {} is on another host than rank 0: shared memory cannot reach it "
                         "(unset COLL_TRANSPORT to use sockets across hosts)",
                         p.rank);
  }
  auto net = chooseNet(ex, rank, all, mode, anyPairRemote);
  COLL_CHECK(net.status());
  // Local pairs over the network too: COLL_TRANSPORT=socket, COLL_NET=ib.
  const bool netOnThisHost = mode == TransportMode::Socket || net.value().ibOnThisHostToo;
  Connected out;
  std::vector<int> localPeers, remotePeers;
  for (const auto& p : all) {
    if (p.rank == rank) continue;
    if (p.hostHash == myHost) {
      ++out.localRanks;
      (netOnThisHost ? remotePeers : localPeers).push_back(p.rank);
    } else {
      out.allLocal = false;
      remotePeers.push_back(p.rank);
    }
  }
  const bool useShm = !netOnThisHost && anyPairLocal;
  const bool useNet = netOnThisHost || anyPairRemote;
  std::unique_ptr<transport::Transport> network;
  if (useNet && net.value().ib) {
#if COLL_HAVE_IBVERBS
    ib::IbOptions io;
    io.settings = net.value().settings;
    io.numaNode = all[rank].numaNode;
    network = std::make_unique<ib::IbTransport>(std::move(io));
#endif
  } else if (useNet) {
    auto so = socketOptions(!anyPairRemote);
    // Still meet the others in their rounds would need our address; failing
    // here fails every rank's init at the same point (a bad
    // COLL_SOCKET_IFNAME is normally set on every rank alike).
    COLL_CHECK(so.status());
    network = std::make_unique<sock::SocketTransport>(so.take());
  }
  if (useShm && useNet) {
    auto shm = std::make_unique<shm::ShmTransport>();
    auto mixed = std::make_unique<mixed::MixedTransport>(std::move(shm), std::move(network));
    COLL_CHECK(mixed->connectParts(ex, rank, all, localPeers, remotePeers, opt));
    out.transport = std::move(mixed);
  } else if (useNet) {
    COLL_CHECK(network->connect(ex, rank, all, remotePeers, opt));
    out.transport = std::move(network);
  } else {
    auto shm = std::make_unique<shm::ShmTransport>();
    COLL_CHECK(shm->connect(ex, rank, all, localPeers, opt));
    out.transport = std::move(shm);
  }
  return out;
}

}  // namespace coll::core
