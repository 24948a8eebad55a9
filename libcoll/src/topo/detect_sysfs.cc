// sysfs's view of the host (detect.h): what a kernel without hwloc still
// tells, and the network ports' rates, which hwloc does not record.
#include <dirent.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <fstream>
#include <set>
#include <sstream>

#include "topo/detect.h"

namespace coll::topo {
namespace {

bool readFile(const std::string& path, std::string& out) {
  std::ifstream f(path);
  if (!f) return false;
  std::stringstream ss;
  ss << f.rdbuf();
  out = ss.str();
  return !f.bad();
}

// The entries of a directory, sorted; none when it does not exist.
std::vector<std::string> listDir(const std::string& path) {
  std::vector<std::string> names;
  if (DIR* d = opendir(path.c_str())) {
    while (dirent* e = readdir(d))
      if (e->d_name[0] != '.') names.emplace_back(e->d_name);
    closedir(d);
  }
  std::sort(names.begin(), names.end());
  return names;
}

// A decimal integer file (numa_node, speed, core_id); false when absent or not a number.
bool readInt(const std::string& path, int64_t& value) {
  std::string text;
  if (!readFile(path, text)) return false;
  char* end = nullptr;
  const long long v = std::strtoll(text.c_str(), &end, 10);
  if (end == text.c_str()) return false;
  value = v;
  return true;
}

// "nodeN" -> N, else -1.
int numberAfter(const std::string& name, const std::string& prefix) {
  if (name.size() <= prefix.size() || name.compare(0, prefix.size(), prefix) != 0) return -1;
  const std::string digits = name.substr(prefix.size());
  if (!std::all_of(digits.begin(), digits.end(), [](char c) { return c >= '0' && c <= '9'; }) || digits.size() > 7)
    return -1;
  return std::atoi(digits.c_str());
}

bool isPciAddress(const std::string& name) {
  // dddd:bb:dd.f
  if (name.size() != 12 || name[4] != ':' || name[7] != ':' || name[10] != '.') return false;
  for (size_t i : {0, 1, 2, 3, 5, 6, 8, 9, 11})
    if (!std::isxdigit(static_cast<unsigned char>(name[i]))) return false;
  return true;
}

// The PCI function a class device sits on: its "device" link resolved
// (.../0000:3b:00.0, or .../0000:00:03.0/virtio2 for a virtio port), the
// last PCI address on that path and its directory.  False for a virtual
// device (no link, or no PCI function above it).
bool pciFunctionOf(const std::string& classDir, std::string& address, std::string& dir) {
  char* resolved = realpath((classDir + "/device").c_str(), nullptr);
  if (resolved == nullptr) return false;
  std::string path(resolved);
  free(resolved);
  while (!path.empty() && path != "/") {
    const size_t slash = path.find_last_of('/');
    const std::string last = path.substr(slash + 1);
    if (isPciAddress(last)) {
      address = last;
      dir = path;
      return true;
    }
    path = path.substr(0, slash);
  }
  return false;
}

int numaOfDevice(const std::string& deviceDir) {
  int64_t node = -1;
  return readInt(deviceDir + "/numa_node", node) && node >= 0 ? static_cast<int>(node) : -1;
}

// "Node 0 MemTotal:       32768000 kB" in nodeN/meminfo.
uint64_t nodeMemoryBytes(const std::string& nodeDir) {
  std::string text;
  if (!readFile(nodeDir + "/meminfo", text)) return 0;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    const size_t at = line.find("MemTotal:");
    if (at == std::string::npos) continue;
    return std::strtoull(line.c_str() + at + 9, nullptr, 10) * 1024;
  }
  return 0;
}

void readCpus(const std::string& root, HostTopology& t, std::vector<int>& online) {
  std::string text;
  if (!readFile(root + "/devices/system/cpu/online", text) || !parseCpuList(text, online)) online.clear();
  std::set<int64_t> packages;
  std::set<std::pair<int64_t, int64_t>> cores;
  for (int c : online) {
    const std::string dir = root + "/devices/system/cpu/cpu" + std::to_string(c) + "/topology";
    int64_t pkg = 0, core = 0;
    if (readInt(dir + "/physical_package_id", pkg) && readInt(dir + "/core_id", core)) {
      packages.insert(pkg);
      cores.insert({pkg, core});
    }
  }
  t.pus = static_cast<int>(online.size());
  t.packages = static_cast<int>(packages.size());
  t.cores = static_cast<int>(cores.size());
}

void readNumaNodes(const std::string& root, HostTopology& t, const std::vector<int>& online) {
  const std::string nodes = root + "/devices/system/node";
  for (const std::string& name : listDir(nodes)) {
    const int index = numberAfter(name, "node");
    if (index < 0) continue;
    NumaNode n;
    n.index = index;
    std::string text;
    if (readFile(nodes + "/" + name + "/cpulist", text) && !parseCpuList(text, n.cpus)) n.cpus.clear();
    n.memoryBytes = nodeMemoryBytes(nodes + "/" + name);
    t.numa.push_back(std::move(n));
  }
  std::sort(t.numa.begin(), t.numa.end(), [](const NumaNode& a, const NumaNode& b) { return a.index < b.index; });
  // A kernel built without NUMA support has no node directory: one node
  // holds every CPU.
  if (t.numa.empty() && !online.empty()) t.numa.push_back(NumaNode{0, online, 0});
}

void readDevices(const std::string& root, HostTopology& t) {
  std::set<std::string> ibAddresses;
  const std::string ib = root + "/class/infiniband";
  for (const std::string& name : listDir(ib)) {
    PciDevice d;
    d.kind = DeviceKind::InfiniBand;
    d.osName = name;
    std::string dir;
    if (!pciFunctionOf(ib + "/" + name, d.busId, dir)) continue;
    d.numa = numaOfDevice(dir);
    d.linkMbps = portMbps(root, d.kind, name);
    ibAddresses.insert(d.busId);
    t.devices.push_back(std::move(d));
  }
  const std::string net = root + "/class/net";
  for (const std::string& name : listDir(net)) {
    PciDevice d;
    d.kind = DeviceKind::Ethernet;
    d.osName = name;
    // No PCI function: virtual (lo, veth, bridges); an IPoIB port of an
    // adapter listed above is that adapter.
    std::string dir;
    if (!pciFunctionOf(net + "/" + name, d.busId, dir) || ibAddresses.count(d.busId) != 0) continue;
    d.numa = numaOfDevice(dir);
    d.linkMbps = portMbps(root, d.kind, name);
    t.devices.push_back(std::move(d));
  }
  const std::string pci = root + "/bus/pci/devices";
  for (const std::string& addr : listDir(pci)) {
    std::string vendor, cls;
    if (!readFile(pci + "/" + addr + "/vendor", vendor) || !readFile(pci + "/" + addr + "/class", cls)) continue;
    // NVIDIA (0x10de), display controller: VGA (0x0300) or 3D (0x0302).
    if (vendor.compare(0, 6, "0x10de") != 0 || (cls.compare(0, 6, "0x0300") != 0 && cls.compare(0, 6, "0x0302") != 0))
      continue;
    PciDevice d;
    d.kind = DeviceKind::Gpu;
    d.busId = addr;
    d.numa = numaOfDevice(pci + "/" + addr);
    t.devices.push_back(std::move(d));
  }
}

}  // namespace

int64_t portMbps(const std::string& root, DeviceKind kind, const std::string& osName) {
  if (kind == DeviceKind::Ethernet) {
    int64_t mbps = -1;
    return readInt(root + "/class/net/" + osName + "/speed", mbps) && mbps > 0 ? mbps : -1;
  }
  if (kind != DeviceKind::InfiniBand) return -1;
  const std::string ports = root + "/class/infiniband/" + osName + "/ports";
  for (const std::string& p : listDir(ports)) {
    std::string state, rate;
    // "4: ACTIVE"; a port that is down reports a rate it does not run at.
    if (!readFile(ports + "/" + p + "/state", state) || state.find("ACTIVE") == std::string::npos) continue;
    if (!readFile(ports + "/" + p + "/rate", rate)) continue;
    char* end = nullptr;
    const double gbps = std::strtod(rate.c_str(), &end);
    if (end != rate.c_str() && gbps > 0 && rate.find("Gb/sec") != std::string::npos)
      return static_cast<int64_t>(gbps * 1000 + 0.5);
  }
  return -1;
}

Result<HostTopology> readSysfs(const std::string& root, const DetectOptions& opts) {
  HostTopology t;
  t.source = root == "/sys" ? "sysfs" : "sysfs at " + root;
  std::vector<int> online;
  readCpus(root, t, online);
  readNumaNodes(root, t, online);
  if (t.numa.empty()) return makeError(collSystemError, "{}: no CPUs found (devices/system/cpu/online)", t.source);
  if (opts.devices) {
    readDevices(root, t);
    // A machine of one node reports -1 for its devices' numa_node.
    if (t.numa.size() == 1)
      for (PciDevice& d : t.devices)
        if (d.numa < 0) d.numa = t.numa[0].index;
  }
  return t;
}

}  // namespace coll::topo
