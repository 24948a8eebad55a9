#include "ib/ib_qp.h"

#include <cerrno>
#include <cstring>

#include "ib/hca_filter.h"

namespace coll::ib {

static_assert(kLinkInfiniBand == IBV_LINK_LAYER_INFINIBAND && kLinkEthernet == IBV_LINK_LAYER_ETHERNET);

Result<std::vector<IbNic>> chooseNics(const VerbsApi& api, const IbSettings& s, int numaNode) {
  auto devices = listIbDevices(api);
  COLL_CHECK(devices.status());
  std::vector<PortRef> active;
  std::vector<IbNic> candidates;
  for (const IbDevice& d : devices.value())
    for (const IbPort& p : d.ports) {
      if (!p.active) continue;
      active.push_back({d.name, p.port});
      IbNic n;
      n.device = d.name;
      n.port = p.port;
      n.facts = p;
      n.numa = d.numa;
      candidates.push_back(std::move(n));
    }
  const std::vector<PortRef> chosen = selectPorts(s.hca, active);
  std::vector<IbNic> near, far;
  for (IbNic& n : candidates) {
    bool take = false;
    for (const PortRef& r : chosen) take = take || (r.device == n.device && r.port == n.port);
    if (!take) continue;
    (numaNode >= 0 && n.numa == numaNode ? near : far).push_back(std::move(n));
  }
  std::vector<IbNic>& use = near.empty() ? far : near;
  if (use.size() > static_cast<size_t>(kMaxRails)) use.resize(kMaxRails);
  return std::move(use);
}

Status openNics(const VerbsApi& api, const IbSettings& s, std::vector<IbNic>& nics) {
  int n = 0;
  ibv_device** list = api.getDeviceList(&n);
  if (list == nullptr) return makeError(collSystemError, "ib: ibv_get_device_list failed: {}", std::strerror(errno));
  Status st = Status::ok();
  for (IbNic& nic : nics) {
    ibv_device* dev = nullptr;
    for (int i = 0; i < n && !dev; ++i)
      if (const char* name = api.getDeviceName(list[i]); name && nic.device == name) dev = list[i];
    if (!dev) {
      st = makeError(collSystemError, "ib: device {} vanished", nic.device);
      break;
    }
    nic.ctx = api.openDevice(dev);
    if (!nic.ctx) {
      st = makeError(collSystemError, "ib: cannot open {}: {}", nic.device, std::strerror(errno));
      break;
    }
    nic.pd = api.allocPd(nic.ctx);
    if (!nic.pd) {
      st = makeError(collSystemError, "ib: cannot allocate a protection domain on {}: {}", nic.device,
                     std::strerror(errno));
      break;
    }
    nic.gidIndex = s.gidIndex >= 0 ? s.gidIndex : nic.facts.autoGidIndex;
    if (api.queryGid(nic.ctx, static_cast<uint8_t>(nic.port), nic.gidIndex, &nic.gid) != 0) {
      st = makeError(collInvalidArgument, "COLL_IB_GID_INDEX={}: {} has no GID at that index", nic.gidIndex,
                     nic.label());
      break;
    }
  }
  api.freeDeviceList(list);
  return st;
}

void closeNics(const VerbsApi& api, std::vector<IbNic>& nics) {
  for (IbNic& nic : nics) {
    if (nic.pd) api.deallocPd(nic.pd);
    if (nic.ctx) api.closeDevice(nic.ctx);
    nic.pd = nullptr;
    nic.ctx = nullptr;
  }
}

WireNic wireNic(const IbNic& nic) {
  WireNic w{};
  memcpy(w.gid, nic.gid.raw, sizeof(w.gid));
  w.lid = nic.facts.lid;
  w.linkLayer = nic.facts.link == LinkLayer::InfiniBand ? kLinkInfiniBand : kLinkEthernet;
  int mtu = IBV_MTU_1024;
  for (int m = IBV_MTU_256; m <= IBV_MTU_4096; ++m)
    if (mtuBytes(m) == nic.facts.mtuBytes) mtu = m;
  w.mtu = static_cast<uint8_t>(mtu);
  w.gidIndex = static_cast<uint32_t>(nic.gidIndex);
  return w;
}

Result<ibv_qp*> createRcQp(const VerbsApi& api, IbNic& nic, ibv_cq* cq, const QpDepths& d) {
  ibv_qp_init_attr init{};
  init.send_cq = cq;
  init.recv_cq = cq;
  init.qp_type = IBV_QPT_RC;
  init.cap.max_send_wr = static_cast<uint32_t>(d.send);
  init.cap.max_recv_wr = static_cast<uint32_t>(d.recv);
  init.cap.max_send_sge = 2;  // a header from the staging slot, a payload from registered user memory
  init.cap.max_recv_sge = 1;
  init.cap.max_inline_data = static_cast<uint32_t>(d.inlineBytes);
  ibv_qp* qp = api.createQp(nic.pd, &init);
  if (!qp) return makeError(collSystemError, "ib: ibv_create_qp on {} failed: {}", nic.label(), std::strerror(errno));
  ibv_qp_attr a{};
  a.qp_state = IBV_QPS_INIT;
  a.pkey_index = 0;
  a.port_num = static_cast<uint8_t>(nic.port);
  a.qp_access_flags = IBV_ACCESS_REMOTE_WRITE;
  if (int rc = api.modifyQp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS); rc != 0) {
    api.destroyQp(qp);
    return makeError(collSystemError, "ib: QP {:#x} on {}: RESET -> INIT failed: {}", qp->qp_num, nic.label(),
                     std::strerror(rc));
  }
  return qp;
}

Status connectRcQp(const VerbsApi& api, ibv_qp* qp, const IbNic& nic, const WireNic& remote, uint32_t remoteQpn,
                   const IbSettings& s) {
  ibv_qp_attr a{};
  a.qp_state = IBV_QPS_RTR;
  // Both ends must use one MTU: the smaller active one.
  int localMtu = wireNic(nic).mtu;
  a.path_mtu = static_cast<ibv_mtu>(std::min<int>(localMtu, remote.mtu));
  a.dest_qp_num = remoteQpn;
  a.rq_psn = remoteQpn & 0xffffff;
  a.max_dest_rd_atomic = 1;
  a.min_rnr_timer = 12;  // 0.64 ms
  a.ah_attr.port_num = static_cast<uint8_t>(nic.port);
  a.ah_attr.sl = static_cast<uint8_t>(s.serviceLevel);
  if (remote.linkLayer == kLinkInfiniBand && nic.facts.link == LinkLayer::InfiniBand) {
    a.ah_attr.dlid = remote.lid;
  } else {
    a.ah_attr.is_global = 1;
    memcpy(a.ah_attr.grh.dgid.raw, remote.gid, sizeof(remote.gid));
    a.ah_attr.grh.sgid_index = static_cast<uint8_t>(nic.gidIndex);
    a.ah_attr.grh.hop_limit = 255;
    a.ah_attr.grh.traffic_class = static_cast<uint8_t>(s.trafficClass);
  }
  const int rtr = IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
                  IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER;
  if (int rc = api.modifyQp(qp, &a, rtr); rc != 0)
    return makeError(collSystemError, "ib: QP {:#x} on {}: INIT -> RTR (to QP {:#x}) failed: {}", qp->qp_num,
                     nic.label(), remoteQpn, std::strerror(rc));
  ibv_qp_attr r{};
  r.qp_state = IBV_QPS_RTS;
  r.timeout = static_cast<uint8_t>(s.timeout);
  r.retry_cnt = static_cast<uint8_t>(s.retryCnt);
  r.rnr_retry = 7;  // for ever: a receive is always posted again; RNR only delays
  r.sq_psn = qp->qp_num & 0xffffff;
  r.max_rd_atomic = 1;
  const int rts = IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY | IBV_QP_SQ_PSN |
                  IBV_QP_MAX_QP_RD_ATOMIC;
  if (int rc = api.modifyQp(qp, &r, rts); rc != 0)
    return makeError(collSystemError, "ib: QP {:#x} on {}: RTR -> RTS failed: {}", qp->qp_num, nic.label(),
                     std::strerror(rc));
  return Status::ok();
}

std::string wcStatusText(const VerbsApi& api, ibv_wc_status st) {
  const char* text = api.wcStatusStr ? api.wcStatusStr(st) : nullptr;
  return fmt::format("{} (status {})", text ? text : "unknown status", static_cast<int>(st));
}

}  // namespace coll::ib
