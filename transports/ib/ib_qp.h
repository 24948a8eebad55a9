// ib_qp.h — opening the chosen ports and bringing RC queue pairs up:
// RESET -> INIT -> RTR -> RTS with the attributes the COLL_IB_* settings
// give, addressed by LID on InfiniBand and by GID (with a GRH) on RoCE.
#pragma once

#include <string>
#include <vector>

#include "coll/base/status.h"
#include "ib/ib_devices.h"
#include "ib/ib_settings.h"
#include "ib/ib_wire.h"
#include "ib/verbs_api.h"

namespace coll::ib {

// One opened port: the device context and its protection domain (every MR
// the transport registers is per PD, hence per NIC).
struct IbNic {
  std::string device;
  int port = 0;
  IbPort facts;
  int numa = -1;
  int gidIndex = 0;
  ibv_gid gid{};
  ibv_context* ctx = nullptr;
  ibv_pd* pd = nullptr;
  std::string label() const { return device + ":" + std::to_string(port); }
};

// The active ports COLL_IB_HCA selects, nearest to numaNode first (ports
// on another or an unknown node only where none is near), at most
// kMaxRails.  None: an empty list, not an error.
Result<std::vector<IbNic>> chooseNics(const VerbsApi& api, const IbSettings& s, int numaNode);
// Opens each chosen port's device and PD, and resolves its GID.
Status openNics(const VerbsApi& api, const IbSettings& s, std::vector<IbNic>& nics);
void closeNics(const VerbsApi& api, std::vector<IbNic>& nics);

// What WireHeader says of a NIC (rkeys are filled by the caller).
WireNic wireNic(const IbNic& nic);

struct QpDepths {
  int send = 0;
  int recv = 0;
  int inlineBytes = 64;
};

// An RC QP on `cq` (send and receive), moved to INIT with remote write
// allowed: the peer writes into our rings with RDMA writes.
Result<ibv_qp*> createRcQp(const VerbsApi& api, IbNic& nic, ibv_cq* cq, const QpDepths& d);
// INIT -> RTR -> RTS, connected to the remote QP `remoteQpn` on `remote`.
// Our send PSN is our QP number's low 24 bits, the peer's likewise.
Status connectRcQp(const VerbsApi& api, ibv_qp* qp, const IbNic& nic, const WireNic& remote, uint32_t remoteQpn,
                   const IbSettings& s);

// "remote access error (IBV_WC_REM_ACCESS_ERR, 10)" for messages.
std::string wcStatusText(const VerbsApi& api, ibv_wc_status st);

}  // namespace coll::ib
