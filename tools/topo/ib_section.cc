#include "ib_section.h"

#include <fmt/format.h>

#include "ib/ib_settings.h"

namespace coll::topo {
namespace {

const char* portStateName(int s) {
  switch (s) {
    case IBV_PORT_NOP: return "NOP";
    case IBV_PORT_DOWN: return "DOWN";
    case IBV_PORT_INIT: return "INIT";
    case IBV_PORT_ARMED: return "ARMED";
    case IBV_PORT_ACTIVE: return "ACTIVE";
    case IBV_PORT_ACTIVE_DEFER: return "ACTIVE_DEFER";
    default: return "?";
  }
}

std::string portLine(const ib::IbPort& p) {
  std::string out = fmt::format("    port {}: {}, {}", p.port, portStateName(p.state), ib::linkLayerName(p.link));
  if (p.rateGbps > 0)
    out += fmt::format(", {:g} Gb/s ({}X {})", p.rateGbps, p.lanes, p.speedName);
  else
    out += ", rate unknown";
  out += p.mtuBytes > 0 ? fmt::format(", MTU {}", p.mtuBytes) : std::string(", MTU unknown");
  if (p.link == ib::LinkLayer::InfiniBand) out += fmt::format(", LID {}", p.lid);
  out += fmt::format(", {} GIDs", p.gids.size());
  for (const ib::GidEntry& g : p.gids) {
    if (g.index != p.autoGidIndex) continue;
    out += fmt::format(", auto GID index {}: {} ({}{})", g.index, ib::formatGid(g.gid), ib::gidTypeName(g.type),
                       g.ipv4Mapped ? ", IPv4" : "");
    return out + "\n";
  }
  return out + fmt::format(", auto GID index {} (no such entry)\n", p.autoGidIndex);
}

}  // namespace

std::string describeIbDevices(const std::vector<ib::IbDevice>& devices, const std::string& libPath,
                              const HostTopology* host) {
  if (devices.empty()) return fmt::format("no RDMA devices (libibverbs loaded from {})\n", libPath);
  std::string out = fmt::format("RDMA devices: {} (libibverbs loaded from {})\n", devices.size(), libPath);
  for (const ib::IbDevice& d : devices) {
    int numa = d.numa;
    if (numa < 0 && host != nullptr && !d.pciAddress.empty())
      if (const PciDevice* pd = findDevice(*host, d.pciAddress)) numa = pd->numa;
    out += fmt::format("  {}: GUID {}, PCI {}, NUMA node {}", d.name, ib::formatGuid(d.guid),
                       d.pciAddress.empty() ? "unknown" : d.pciAddress,
                       numa >= 0 ? std::to_string(numa) : std::string("unknown"));
    // The GPUs that share its NUMA node: the pairs whose traffic need not
    // cross the inter-socket link.
    if (host != nullptr && numa >= 0) {
      std::string gpus;
      for (const PciDevice& g : host->devices)
        if (g.kind == DeviceKind::Gpu && g.numa == numa) gpus += (gpus.empty() ? "" : " ") + g.busId;
      out += ", near GPUs: " + (gpus.empty() ? std::string("none") : gpus);
    }
    out += "\n";
    if (!d.error.empty()) out += "    not usable: " + d.error + "\n";
    for (const ib::IbPort& p : d.ports) out += portLine(p);
  }
  return out;
}

std::string describeIbHost(const HostTopology* host) {
  auto settings = ib::ibSettingsFromTable();
  if (!settings.isOk()) return "RDMA devices not listed: " + settings.status().message() + "\n";
  auto api = ib::verbsApi(settings.value().verbsLib);
  if (!api.isOk()) return "libibverbs not loadable: " + api.status().message() + "\n";
  auto devices = ib::listIbDevices(*api.value());
  if (!devices.isOk()) return "RDMA devices not listed: " + devices.status().message() + "\n";
  return describeIbDevices(devices.value(), api.value()->path, host);
}

}  // namespace coll::topo
