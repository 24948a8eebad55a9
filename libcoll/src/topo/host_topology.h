// host_topology.h — what one host is made of, as libcoll uses it: its NUMA
// nodes and their CPUs, and the PCI devices collectives care about (GPUs,
// network adapters) with the NUMA node they hang off and their link rates.
// Plain data: detect.h fills it from hwloc, a file or sysfs; everything
// here is a pure function of it, testable without the machine.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace coll::topo {

struct NumaNode {
  int index = 0;           // the OS's node number (/sys/devices/system/node/nodeN)
  std::vector<int> cpus;   // OS CPU numbers, ascending
  uint64_t memoryBytes = 0;  // 0: not known
};

enum class DeviceKind { Gpu, Ethernet, InfiniBand };

struct PciDevice {
  DeviceKind kind = DeviceKind::Ethernet;
  std::string busId;    // "0000:3b:00.0"
  std::string osName;   // "eth0", "mlx5_0"; empty for a GPU without a driver name
  std::string model;    // the PCI model string, where known
  int numa = -1;        // the NUMA node it is attached to (-1: not known)
  double pciGBps = 0;   // the PCI link's rate (hwloc's linkspeed), 0: not known
  int64_t linkMbps = -1;  // the network port's rate (sysfs), -1: not known or down
};

struct HostTopology {
  std::string source;  // where it came from: "hwloc 2.9.0", "hwloc XML <file>", "sysfs", ...
  int packages = 0;    // 0: not known
  int cores = 0;
  int pus = 0;         // hardware threads
  std::vector<NumaNode> numa;
  std::vector<PciDevice> devices;
};

// The NUMA node (its index) holding every one of cpus; -1 when they span
// several nodes, include a CPU no node lists, or cpus is empty.
int numaOfCpus(const HostTopology& t, const std::vector<int>& cpus);

// "0-3,8,10-11" for {0,1,2,3,8,10,11}; "" for none.
std::string formatCpuList(const std::vector<int>& cpus);
// The kernel's cpulist format (sysfs cpulist files, taskset -c): ranges and
// single CPUs separated by commas, whitespace around ignored.  False on
// anything else (out is then unspecified).
bool parseCpuList(const std::string& text, std::vector<int>& out);

// The device at a PCI address ("0000:3b:00.0"), nullptr if none.
const PciDevice* findDevice(const HostTopology& t, const std::string& busId);

const char* deviceKindName(DeviceKind k);
// Several lines: packages, cores, NUMA nodes with their CPUs and memory,
// then one line per device.
std::string describe(const HostTopology& t);
// One line for logs: "hwloc 2.9.0: 2 packages, 32 cores, 64 PUs, 2 NUMA nodes, 1 GPU, 2 NICs".
std::string summary(const HostTopology& t);

}  // namespace coll::topo
