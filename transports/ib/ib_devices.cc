#include "ib/ib_devices.h"

#include <endian.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>

#include <fmt/format.h>

namespace coll::ib {
namespace {

bool readLine(const std::string& path, std::string& out) {
  std::ifstream f(path);
  if (!f || !std::getline(f, out)) return false;
  while (!out.empty() && (out.back() == '\n' || out.back() == ' ' || out.back() == '\r')) out.pop_back();
  return true;
}

// rdma-core 47 added active_speed_ex (32 bits, for XDR = 256, which the
// 8-bit active_speed cannot hold); older headers lack it.
template <class Attr>
uint32_t activeSpeedOf(const Attr& a) {
  if constexpr (requires { a.active_speed_ex; }) {
    if (a.active_speed_ex != 0) return a.active_speed_ex;
  }
  return a.active_speed;
}

LinkLayer linkLayerOf(uint8_t l) {
  switch (l) {
    case IBV_LINK_LAYER_INFINIBAND: return LinkLayer::InfiniBand;
    case IBV_LINK_LAYER_ETHERNET: return LinkLayer::Ethernet;
    default: return LinkLayer::Unspecified;
  }
}

IbPort queryOnePort(const VerbsApi& api, ibv_context* ctx, int portNum, const ibv_port_attr& a) {
  IbPort p;
  p.port = portNum;
  p.state = a.state;
  p.active = a.state == IBV_PORT_ACTIVE;
  // Providers from before RoCE leave link_layer 0: those are InfiniBand.
  p.link = a.link_layer == IBV_LINK_LAYER_UNSPECIFIED ? LinkLayer::InfiniBand : linkLayerOf(a.link_layer);
  const uint32_t speed = activeSpeedOf(a);
  p.lanes = widthLanes(a.active_width);
  p.laneGbps = speedLaneGbps(speed);
  p.rateGbps = p.lanes * p.laneGbps;
  p.speedName = speedName(speed);
  p.mtuBytes = mtuBytes(a.active_mtu);
  p.lid = p.link == LinkLayer::InfiniBand ? a.lid : 0;
  for (int i = 0; i < a.gid_tbl_len; ++i) {
    ibv_gid gid{};
    if (api.queryGid(ctx, static_cast<uint8_t>(portNum), i, &gid) != 0) continue;
    GidEntry e;
    e.index = i;
    std::memcpy(e.gid.data(), gid.raw, 16);
    // Unused RoCE entries read as zeros.
    if (e.gid == std::array<uint8_t, 16>{}) continue;
    e.ipv4Mapped = isIpv4Mapped(e.gid);
    p.gids.push_back(e);
  }
  return p;
}

// Opens one device and reads its ports; failures land in dev.error.
void queryDevice(const VerbsApi& api, ibv_device* d, IbDevice& dev) {
  ibv_context* ctx = api.openDevice(d);
  if (ctx == nullptr) {
    dev.error = fmt::format("ibv_open_device failed: {}", std::strerror(errno));
    return;
  }
  ibv_device_attr attr{};
  if (int rc = api.queryDevice(ctx, &attr); rc != 0) {
    dev.error = fmt::format("ibv_query_device failed: {}", std::strerror(rc > 0 ? rc : errno));
  } else {
    for (int port = 1; port <= attr.phys_port_cnt; ++port) {
      ibv_port_attr pa;
      if (int prc = api.queryPort(ctx, static_cast<uint8_t>(port), &pa); prc != 0) {
        dev.error = fmt::format("ibv_query_port({}) failed: {}", port, std::strerror(prc > 0 ? prc : errno));
        break;
      }
      dev.ports.push_back(queryOnePort(api, ctx, port, pa));
    }
  }
  api.closeDevice(ctx);
}

}  // namespace

int widthLanes(uint32_t activeWidth) {
  switch (activeWidth) {
    case 1: return 1;
    case 2: return 4;
    case 4: return 8;
    case 8: return 12;
    case 16: return 2;
    default: return 0;
  }
}

double speedLaneGbps(uint32_t activeSpeed) {
  switch (activeSpeed) {
    case 1: return 2.5;
    case 2: return 5;
    case 4: return 10;
    case 8: return 10;  // FDR10: QDR's signalling rate with 64b/66b coding
    case 16: return 14;
    case 32: return 25;
    case 64: return 50;
    case 128: return 100;
    case 256: return 200;
    default: return 0;
  }
}

const char* speedName(uint32_t activeSpeed) {
  switch (activeSpeed) {
    case 1: return "SDR";
    case 2: return "DDR";
    case 4: return "QDR";
    case 8: return "FDR10";
    case 16: return "FDR";
    case 32: return "EDR";
    case 64: return "HDR";
    case 128: return "NDR";
    case 256: return "XDR";
    default: return "";
  }
}

int mtuBytes(int mtu) { return mtu >= IBV_MTU_256 && mtu <= IBV_MTU_4096 ? 128 << mtu : 0; }

GidType parseGidType(const std::string& text) {
  if (text == "RoCE v2") return GidType::RoceV2;
  if (text == "IB/RoCE v1" || text == "RoCE v1" || text == "IB") return GidType::IbOrRoceV1;
  return GidType::Unknown;
}

bool isIpv4Mapped(const std::array<uint8_t, 16>& gid) {
  for (int i = 0; i < 10; ++i)
    if (gid[i] != 0) return false;
  return gid[10] == 0xff && gid[11] == 0xff;
}

std::string formatGid(const std::array<uint8_t, 16>& gid) {
  std::string out;
  for (int i = 0; i < 16; i += 2) out += fmt::format("{}{:02x}{:02x}", i ? ":" : "", gid[i], gid[i + 1]);
  return out;
}

std::string formatGuid(uint64_t guid) {
  return fmt::format("{:04x}:{:04x}:{:04x}:{:04x}", (guid >> 48) & 0xffff, (guid >> 32) & 0xffff,
                     (guid >> 16) & 0xffff, guid & 0xffff);
}

const char* linkLayerName(LinkLayer l) {
  switch (l) {
    case LinkLayer::InfiniBand: return "InfiniBand";
    case LinkLayer::Ethernet: return "Ethernet";
    case LinkLayer::Unspecified: break;
  }
  return "unspecified";
}

const char* gidTypeName(GidType t) {
  switch (t) {
    case GidType::IbOrRoceV1: return "IB/RoCE v1";
    case GidType::RoceV2: return "RoCE v2";
    case GidType::Unknown: break;
  }
  return "unknown";
}

int autoGidIndex(LinkLayer link, const std::vector<GidEntry>& gids) {
  if (link != LinkLayer::Ethernet) return 0;
  for (const GidEntry& g : gids)
    if (g.type == GidType::RoceV2 && g.ipv4Mapped) return g.index;
  for (const GidEntry& g : gids)
    if (g.type == GidType::RoceV2) return g.index;
  // No type known (no sysfs gid_attrs, as under the emulated provider): an
  // IPv4-mapped GID is the routable one.
  if (std::all_of(gids.begin(), gids.end(), [](const GidEntry& g) { return g.type == GidType::Unknown; }))
    for (const GidEntry& g : gids)
      if (g.ipv4Mapped) return g.index;
  return gids.empty() ? 0 : gids.front().index;
}

void addSysfsFacts(const std::string& sysRoot, IbDevice& dev) {
  namespace fs = std::filesystem;
  const std::string base = sysRoot + "/class/infiniband/" + dev.name;
  // device -> ../../../0000:3b:00.0: the PCI function's directory.
  std::error_code ec;
  const fs::path pci = fs::canonical(base + "/device", ec);
  if (!ec) dev.pciAddress = pci.filename().string();
  std::string numa;
  if (readLine(base + "/device/numa_node", numa)) {
    char* end = nullptr;
    const long n = std::strtol(numa.c_str(), &end, 10);
    if (end != numa.c_str() && *end == '\0' && n >= 0) dev.numa = static_cast<int>(n);
  }
  for (IbPort& p : dev.ports) {
    for (GidEntry& g : p.gids) {
      if (p.link == LinkLayer::InfiniBand) {
        g.type = GidType::IbOrRoceV1;
        continue;
      }
      std::string text;
      const std::string types = fmt::format("{}/ports/{}/gid_attrs/types/{}", base, p.port, g.index);
      g.type = readLine(types, text) ? parseGidType(text) : GidType::Unknown;
    }
    p.autoGidIndex = autoGidIndex(p.link, p.gids);
  }
}

Result<std::vector<IbDevice>> listIbDevices(const VerbsApi& api, const std::string& sysRoot) {
  int n = 0;
  errno = 0;
  ibv_device** list = api.getDeviceList(&n);
  if (list == nullptr) {
    if (errno == ENOSYS) return std::vector<IbDevice>();
    return makeError(collSystemError, "ibv_get_device_list ({}) failed: {}", api.path, std::strerror(errno));
  }
  std::vector<IbDevice> out;
  for (int i = 0; i < n; ++i) {
    IbDevice dev;
    const char* name = api.getDeviceName(list[i]);
    dev.name = name ? name : fmt::format("device{}", i);
    dev.guid = be64toh(api.getDeviceGuid(list[i]));
    queryDevice(api, list[i], dev);
    addSysfsFacts(sysRoot, dev);
    out.push_back(std::move(dev));
  }
  api.freeDeviceList(list);
  return out;
}

}  // namespace coll::ib
