// Devices, contexts and their queries: emu_0, emu_1 with one active port each.
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <new>

#include "objects.h"
#include "ops.h"

#undef ibv_query_port

using namespace coll::verbs_emu;

namespace {

// The devices live as long as the library, as rdma-core's do.
ibv_device g_devices[kMaxNics];

int nicOf(ibv_device* dev) {
  for (int i = 0; i < kMaxNics; ++i)
    if (dev == &g_devices[i]) return i;
  return -1;
}

}  // namespace

extern "C" {

__attribute__((visibility("default"))) ibv_device** ibv_get_device_list(int* num_devices) {
  Process& p = process();
  std::lock_guard<std::mutex> guard(p.mu);
  EmuConfig cfg;
  std::string error;
  if (!readConfig(&cfg, &error)) {
    std::fprintf(stderr, "libcoll_verbs_emu: %s\n", error.c_str());
    errno = EINVAL;
    return nullptr;
  }
  if (p.contexts == 0) p.cfg = cfg;  // an open fabric keeps the shape it opened with
  auto** list = static_cast<ibv_device**>(std::calloc(kMaxNics + 1, sizeof(ibv_device*)));
  if (!list) {
    errno = ENOMEM;
    return nullptr;
  }
  for (int i = 0; i < cfg.nics; ++i) {
    ibv_device& d = g_devices[i];
    d.node_type = IBV_NODE_CA;
    d.transport_type = IBV_TRANSPORT_IB;
    std::snprintf(d.name, sizeof(d.name), "emu_%d", i);
    std::snprintf(d.dev_name, sizeof(d.dev_name), "uverbs%d", i);
    std::snprintf(d.dev_path, sizeof(d.dev_path), "/sys/class/infiniband_verbs/uverbs%d", i);
    std::snprintf(d.ibdev_path, sizeof(d.ibdev_path), "/sys/class/infiniband/emu_%d", i);
    list[i] = &d;
  }
  if (num_devices) *num_devices = cfg.nics;
  return list;
}

__attribute__((visibility("default"))) void ibv_free_device_list(ibv_device** list) { std::free(list); }

__attribute__((visibility("default"))) const char* ibv_get_device_name(ibv_device* device) {
  if (nicOf(device) < 0) {
    errno = EINVAL;
    return nullptr;
  }
  return device->name;
}

__attribute__((visibility("default"))) __be64 ibv_get_device_guid(ibv_device* device) {
  const int nic = nicOf(device);
  if (nic < 0) return 0;
  return htobe64(portIdentity(process().cfg, nic).guid);
}

__attribute__((visibility("default"))) ibv_context* ibv_open_device(ibv_device* device) {
  const int nic = nicOf(device);
  Process& p = process();
  std::lock_guard<std::mutex> guard(p.mu);
  if (nic < 0 || nic >= p.cfg.nics) {
    errno = ENODEV;
    return nullptr;
  }
  if (p.reg && p.pid != getpid()) {
    // A forked child starts afresh: the parent's objects are not its own
    // (as with rdma-core, where a child must open its own device).
    p.reg = nullptr;
    p.contexts = 0;
    p.qps.clear();
    p.cqs.clear();
    p.remote_rings.clear();
  }
  if (p.contexts == 0) {
    if (!p.reg) {
      p.reg = Registry::join(p.cfg.fabric);
      if (!p.reg) return nullptr;
      p.pid = getpid();
    }
  }
  auto* c = new (std::nothrow) EmuContext{};
  if (!c) {
    errno = ENOMEM;
    return nullptr;
  }
  c->nic = nic;
  c->infiniband = p.cfg.infiniband;
  c->port = portIdentity(p.cfg, nic);
  c->ctx.device = device;
  c->ctx.cmd_fd = -1;
  c->ctx.async_fd = -1;
  c->ctx.num_comp_vectors = 1;
  pthread_mutex_init(&c->ctx.mutex, nullptr);
  c->ctx.abi_compat = nullptr;  // not a verbs_context: extended inlines return EOPNOTSUPP
  fillContextOps(&c->ctx.ops);
  ++p.contexts;
  return &c->ctx;
}

__attribute__((visibility("default"))) int ibv_close_device(ibv_context* context) {
  Process& p = process();
  std::lock_guard<std::mutex> guard(p.mu);
  EmuContext* c = emuContext(context);
  pthread_mutex_destroy(&c->ctx.mutex);
  delete c;
  if (--p.contexts == 0 && p.reg) {
    // The last context: leave the fabric (our QPs, MRs and rings go with it).
    p.remote_rings.clear();
    p.reg->leave();
    p.reg = nullptr;
  }
  return 0;
}

__attribute__((visibility("default"))) int ibv_query_device(ibv_context* context, ibv_device_attr* attr) {
  EmuContext* c = emuContext(context);
  std::memset(attr, 0, sizeof(*attr));
  std::snprintf(attr->fw_ver, sizeof(attr->fw_ver), "coll-verbs-emu 1.0");
  attr->node_guid = htobe64(c->port.guid);
  attr->sys_image_guid = htobe64(c->port.guid & ~0xffull);
  attr->max_mr_size = 1ull << 40;
  attr->page_size_cap = 0x1000;
  attr->vendor_id = 0;
  attr->vendor_part_id = 0;
  attr->hw_ver = 1;
  attr->max_qp = static_cast<int>(kMaxQps);
  attr->max_qp_wr = 4096;
  attr->device_cap_flags = IBV_DEVICE_RC_RNR_NAK_GEN;
  attr->max_sge = 16;
  attr->max_sge_rd = 0;  // RDMA reads are not emulated
  attr->max_cq = static_cast<int>(kMaxSegs / 2);
  attr->max_cqe = 1 << 16;
  attr->max_mr = static_cast<int>(kMaxMrs);
  attr->max_pd = 1 << 16;
  attr->max_qp_rd_atom = 16;
  attr->max_qp_init_rd_atom = 16;
  attr->max_res_rd_atom = 16 * static_cast<int>(kMaxQps);
  attr->atomic_cap = IBV_ATOMIC_NONE;
  attr->max_pkeys = 1;
  attr->phys_port_cnt = 1;
  return 0;
}

// The exported (compat) form: rdma-core casts to struct ibv_port_attr and
// fills it whole, as here.
__attribute__((visibility("default"))) int ibv_query_port(ibv_context* context, uint8_t port_num,
                                                          _compat_ibv_port_attr* compat) {
  if (port_num != 1) return EINVAL;
  EmuContext* c = emuContext(context);
  auto* a = reinterpret_cast<ibv_port_attr*>(compat);
  std::memset(a, 0, sizeof(*a));
  a->state = IBV_PORT_ACTIVE;
  a->max_mtu = IBV_MTU_4096;
  a->active_mtu = IBV_MTU_4096;
  a->gid_tbl_len = kGidCount;
  a->port_cap_flags = c->infiniband ? 0 : IBV_PORT_IP_BASED_GIDS;
  a->max_msg_sz = 1u << 31;
  a->pkey_tbl_len = 1;
  a->lid = c->port.lid;
  a->sm_lid = c->infiniband ? 1 : 0;
  a->max_vl_num = 1;
  a->active_width = process().cfg.active_width;
  a->active_speed = process().cfg.active_speed;
  a->phys_state = 5;  // LinkUp
  a->link_layer = c->infiniband ? IBV_LINK_LAYER_INFINIBAND : IBV_LINK_LAYER_ETHERNET;
  return 0;
}

__attribute__((visibility("default"))) int ibv_query_gid(ibv_context* context, uint8_t port_num, int index,
                                                         ibv_gid* gid) {
  if (port_num != 1 || index < 0 || index >= kGidCount) return -1;  // rdma-core: -1 on a bad entry
  *gid = emuContext(context)->port.gids[index];
  return 0;
}

}  // extern "C"
