// transport_select.h — which transport carries which peer.
//
// COLL_TRANSPORT=auto (default): shared memory between ranks on one host,
// sockets across hosts (shm+socket when a job has both).  shm: every rank
// must be on this host.  socket: TCP for every peer, also on one host
// (loopback), which is how the socket path is tested on one machine.
// Every rank takes the same decision from the same table of hosts, so all
// of them make the same bootstrap rounds.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "coll/transport.h"
#include "coll/base/status.h"

namespace coll::core {

enum class TransportMode { Auto = 0, Shm = 1, Socket = 2 };

Result<TransportMode> transportModeFromEnv();
const char* transportModeName(TransportMode m);

struct Connected {
  std::unique_ptr<transport::Transport> transport;
  int localRanks = 1;     // ranks on this host, us included
  bool allLocal = true;   // every rank on this host
};

// Connects this rank to every other rank (a clique).
Result<Connected> connectTransports(transport::Exchange& ex, int rank, const std::vector<transport::PeerInfo>& all,
                                    TransportMode mode, const transport::ConnectOptions& opt);

}  // namespace coll::core
