// hwloc's view of the host (detect.h): this machine, an XML file or a
// synthetic description.
#include <hwloc.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <memory>
#include <set>

#include "topo/detect.h"

namespace coll::topo {
namespace {

constexpr const char* kRateInfo = "CollLinkMbps";  // a port's sysfs rate, in files exportXml writes

struct TopologyDeleter {
  void operator()(hwloc_topology* t) const { hwloc_topology_destroy(t); }
};
using TopologyPtr = std::unique_ptr<hwloc_topology, TopologyDeleter>;

std::vector<int> cpusOf(hwloc_const_cpuset_t set) {
  std::vector<int> cpus;
  if (set == nullptr) return cpus;
  unsigned id = 0;
  hwloc_bitmap_foreach_begin(id, set) { cpus.push_back(static_cast<int>(id)); }
  hwloc_bitmap_foreach_end();
  return cpus;
}

Result<TopologyPtr> load(const std::string& spec, bool devices) {
  hwloc_topology_t raw = nullptr;
  if (hwloc_topology_init(&raw) != 0) return makeError(collSystemError, "hwloc_topology_init: {}", strerror(errno));
  TopologyPtr topo(raw);
  static const std::string kSynthetic = "synthetic:";
  if (spec.compare(0, kSynthetic.size(), kSynthetic) == 0) {
    const std::string desc = spec.substr(kSynthetic.size());
    if (hwloc_topology_set_synthetic(raw, desc.c_str()) != 0)
      return makeError(collInvalidArgument, "hwloc rejects the synthetic description '{}' (e.g. 'pack:2 numa:1 core:4 pu:2')",
                       desc);
  } else if (!spec.empty()) {
    if (access(spec.c_str(), R_OK) != 0) return makeError(collInvalidArgument, "cannot read {}: {}", spec, strerror(errno));
    if (hwloc_topology_set_xml(raw, spec.c_str()) != 0)
      return makeError(collInvalidArgument, "hwloc cannot use {} as an XML topology: {}", spec, strerror(errno));
  }
  if (devices) hwloc_topology_set_io_types_filter(raw, HWLOC_TYPE_FILTER_KEEP_IMPORTANT);
  if (hwloc_topology_load(raw) != 0)
    return makeError(spec.empty() ? collSystemError : collInvalidArgument, "hwloc could not load {}: {}",
                     spec.empty() ? "this machine's topology" : spec, strerror(errno));
  return topo;
}

std::string busIdOf(hwloc_obj_t pci) {
  const auto& a = pci->attr->pcidev;
  return fmt::format("{:04x}:{:02x}:{:02x}.{:x}", a.domain, a.bus, a.dev, a.func);
}

hwloc_obj_t pciAncestor(hwloc_obj_t o) {
  while (o != nullptr && o->type != HWLOC_OBJ_PCI_DEVICE) o = o->parent;
  return o;
}

// The NUMA node above an I/O object, when exactly one is.
int numaOf(hwloc_topology_t topo, hwloc_obj_t o) {
  hwloc_obj_t cpuSide = hwloc_get_non_io_ancestor_obj(topo, o);
  if (cpuSide == nullptr || cpuSide->nodeset == nullptr || hwloc_bitmap_weight(cpuSide->nodeset) != 1) return -1;
  return hwloc_bitmap_first(cpuSide->nodeset);
}

void fillPci(hwloc_topology_t topo, hwloc_obj_t pci, PciDevice& d) {
  d.busId = busIdOf(pci);
  d.numa = numaOf(topo, pci);
  d.pciGBps = pci->attr->pcidev.linkspeed;
  if (const char* model = hwloc_obj_get_info_by_name(pci, "PCIDevice")) d.model = model;
}

void readDevices(hwloc_topology_t topo, bool live, HostTopology& t) {
  for (hwloc_obj_t pci = hwloc_get_next_pcidev(topo, nullptr); pci != nullptr; pci = hwloc_get_next_pcidev(topo, pci)) {
    const auto& a = pci->attr->pcidev;
    const unsigned cls = a.class_id;
    if (a.vendor_id != 0x10de || (cls != 0x0300 && cls != 0x0302)) continue;  // NVIDIA VGA / 3D controller
    PciDevice d;
    d.kind = DeviceKind::Gpu;
    fillPci(topo, pci, d);
    t.devices.push_back(std::move(d));
  }
  // InfiniBand adapters first: an IPoIB port (a network OS device under the
  // same PCI function) is that adapter, not another one.
  std::set<std::string> seen;
  for (auto wanted : {HWLOC_OBJ_OSDEV_OPENFABRICS, HWLOC_OBJ_OSDEV_NETWORK}) {
    for (hwloc_obj_t os = hwloc_get_next_osdev(topo, nullptr); os != nullptr; os = hwloc_get_next_osdev(topo, os)) {
      if (os->attr->osdev.type != wanted || os->name == nullptr) continue;
      hwloc_obj_t pci = pciAncestor(os);
      if (pci == nullptr) continue;
      PciDevice d;
      d.kind = wanted == HWLOC_OBJ_OSDEV_OPENFABRICS ? DeviceKind::InfiniBand : DeviceKind::Ethernet;
      d.osName = os->name;
      fillPci(topo, pci, d);
      if (!seen.insert(d.busId).second) continue;
      if (const char* rate = hwloc_obj_get_info_by_name(os, kRateInfo)) {
        d.linkMbps = std::strtoll(rate, nullptr, 10);
      } else if (live) {
        d.linkMbps = portMbps("/sys", d.kind, d.osName);
      }
      t.devices.push_back(std::move(d));
    }
  }
}

}  // namespace

bool builtWithHwloc() { return true; }

Result<HostTopology> readHwloc(const std::string& spec, const DetectOptions& opts) {
  auto loaded = load(spec, opts.devices);
  COLL_CHECK(loaded.status());
  hwloc_topology_t topo = loaded.value().get();
  HostTopology t;
  t.source = spec.empty() ? fmt::format("hwloc {}", HWLOC_VERSION) : fmt::format("hwloc {} from {}", HWLOC_VERSION, spec);
  t.packages = hwloc_get_nbobjs_by_type(topo, HWLOC_OBJ_PACKAGE);
  t.cores = hwloc_get_nbobjs_by_type(topo, HWLOC_OBJ_CORE);
  t.pus = hwloc_get_nbobjs_by_type(topo, HWLOC_OBJ_PU);
  const int nodes = hwloc_get_nbobjs_by_type(topo, HWLOC_OBJ_NUMANODE);
  for (int i = 0; i < nodes; ++i) {
    hwloc_obj_t o = hwloc_get_obj_by_type(topo, HWLOC_OBJ_NUMANODE, static_cast<unsigned>(i));
    t.numa.push_back(NumaNode{static_cast<int>(o->os_index), cpusOf(o->cpuset), o->attr->numanode.local_memory});
  }
  if (opts.devices) readDevices(topo, spec.empty(), t);
  return t;
}

Status exportXml(const std::string& path) {
  auto loaded = load("", true);
  COLL_CHECK(loaded.status());
  hwloc_topology_t topo = loaded.value().get();
  for (hwloc_obj_t os = hwloc_get_next_osdev(topo, nullptr); os != nullptr; os = hwloc_get_next_osdev(topo, os)) {
    const auto type = os->attr->osdev.type;
    if (os->name == nullptr || (type != HWLOC_OBJ_OSDEV_NETWORK && type != HWLOC_OBJ_OSDEV_OPENFABRICS)) continue;
    const int64_t mbps =
        portMbps("/sys", type == HWLOC_OBJ_OSDEV_OPENFABRICS ? DeviceKind::InfiniBand : DeviceKind::Ethernet, os->name);
    if (mbps > 0) hwloc_obj_add_info(os, kRateInfo, std::to_string(mbps).c_str());
  }
  if (hwloc_topology_export_xml(topo, path.c_str(), 0) != 0)
    return makeError(collSystemError, "hwloc could not write {}: {}", path, strerror(errno));
  return Status::ok();
}

}  // namespace coll::topo
