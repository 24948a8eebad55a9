#include "topo/host_topology.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>

namespace coll::topo {

int numaOfCpus(const HostTopology& t, const std::vector<int>& cpus) {
  if (cpus.empty()) return -1;
  for (const NumaNode& n : t.numa) {
    const bool holdsAll = std::all_of(cpus.begin(), cpus.end(), [&](int c) {
      return std::binary_search(n.cpus.begin(), n.cpus.end(), c);
    });
    if (holdsAll) return n.index;
  }
  return -1;
}

std::string formatCpuList(const std::vector<int>& cpus) {
  std::string out;
  for (size_t i = 0; i < cpus.size();) {
    size_t j = i;
    while (j + 1 < cpus.size() && cpus[j + 1] == cpus[j] + 1) ++j;
    if (!out.empty()) out += ',';
    out += j == i ? fmt::format("{}", cpus[i]) : fmt::format("{}-{}", cpus[i], cpus[j]);
    i = j + 1;
  }
  return out;
}

namespace {

// A non-negative decimal number at text[pos], at most 7 digits (no CPU
// number is larger), advancing pos.
bool readNumber(const std::string& text, size_t& pos, int& value) {
  size_t start = pos;
  while (pos < text.size() && std::isdigit(static_cast<unsigned char>(text[pos])) && pos - start < 8) ++pos;
  if (pos == start || pos - start > 7) return false;
  value = std::atoi(text.substr(start, pos - start).c_str());
  return true;
}

void skipSpace(const std::string& text, size_t& pos) {
  while (pos < text.size() && std::isspace(static_cast<unsigned char>(text[pos]))) ++pos;
}

}  // namespace

bool parseCpuList(const std::string& text, std::vector<int>& out) {
  out.clear();
  size_t pos = 0;
  skipSpace(text, pos);
  if (pos == text.size()) return true;  // an empty list (a node without CPUs)
  while (true) {
    int lo = 0, hi = 0;
    if (!readNumber(text, pos, lo)) return false;
    hi = lo;
    if (pos < text.size() && text[pos] == '-') {
      ++pos;
      if (!readNumber(text, pos, hi) || hi < lo) return false;
    }
    for (int c = lo; c <= hi; ++c) out.push_back(c);
    skipSpace(text, pos);
    if (pos == text.size()) break;
    if (text[pos] != ',') return false;
    ++pos;
  }
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return true;
}

const PciDevice* findDevice(const HostTopology& t, const std::string& busId) {
  for (const PciDevice& d : t.devices)
    if (d.busId == busId) return &d;
  return nullptr;
}

const char* deviceKindName(DeviceKind k) {
  switch (k) {
    case DeviceKind::Gpu: return "GPU";
    case DeviceKind::Ethernet: return "Ethernet";
    case DeviceKind::InfiniBand: return "InfiniBand";
  }
  return "?";
}

namespace {

std::string plural(int n, const char* one, const char* many) { return fmt::format("{} {}", n, n == 1 ? one : many); }

std::string known(int n, const char* one, const char* many) {
  return n > 0 ? plural(n, one, many) : fmt::format("? {}", many);
}

}  // namespace

std::string summary(const HostTopology& t) {
  int gpus = 0, nics = 0;
  for (const PciDevice& d : t.devices) (d.kind == DeviceKind::Gpu ? gpus : nics)++;
  return fmt::format("{}: {}, {}, {}, {}, {}, {}", t.source, known(t.packages, "package", "packages"),
                     known(t.cores, "core", "cores"), known(t.pus, "PU", "PUs"),
                     plural(static_cast<int>(t.numa.size()), "NUMA node", "NUMA nodes"), plural(gpus, "GPU", "GPUs"),
                     plural(nics, "network adapter", "network adapters"));
}

std::string describe(const HostTopology& t) {
  std::string out = summary(t) + "\n";
  for (const NumaNode& n : t.numa) {
    out += fmt::format("  NUMA node {}: CPUs {}", n.index, n.cpus.empty() ? "none" : formatCpuList(n.cpus));
    if (n.memoryBytes > 0) out += fmt::format(", {:.1f} GiB", static_cast<double>(n.memoryBytes) / (1ull << 30));
    out += "\n";
  }
  for (const PciDevice& d : t.devices) {
    out += fmt::format("  {} {}", deviceKindName(d.kind), d.busId.empty() ? "(no PCI address)" : d.busId);
    if (!d.osName.empty()) out += " " + d.osName;
    if (!d.model.empty()) out += fmt::format(" \"{}\"", d.model);
    out += d.numa >= 0 ? fmt::format(", NUMA node {}", d.numa) : std::string(", NUMA node unknown");
    if (d.pciGBps > 0) out += fmt::format(", PCI link {:.1f} GB/s", d.pciGBps);
    if (d.kind != DeviceKind::Gpu)
      out += d.linkMbps >= 0 ? fmt::format(", port {} Mb/s", d.linkMbps) : std::string(", port rate unknown");
    out += "\n";
  }
  return out;
}

}  // namespace coll::topo
