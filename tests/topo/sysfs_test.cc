// readSysfs and portMbps (topo/detect.h) on a made-up sysfs tree: two NUMA
// nodes, an Ethernet port behind a virtio function, a loopback and a veth
// (virtual: skipped), an InfiniBand adapter with its IPoIB port, an NVIDIA
// GPU and a device of another vendor.
#include <stdlib.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>

#include "topo/detect.h"

namespace fs = std::filesystem;
using namespace coll::topo;

namespace {

struct FakeSysfs {
  fs::path root;

  FakeSysfs() {
    char tmpl[] = "/tmp/coll_topo_sysfs_XXXXXX";
    REQUIRE(mkdtemp(tmpl) != nullptr);
    root = tmpl;
  }
  ~FakeSysfs() {
    std::error_code ec;
    fs::remove_all(root, ec);
  }
  void write(const std::string& rel, const std::string& text) const {
    fs::create_directories((root / rel).parent_path());
    std::ofstream(root / rel) << text;
  }
  void link(const std::string& rel, const std::string& targetRel) const {
    fs::create_directories((root / rel).parent_path());
    fs::create_directories(root / targetRel);
    fs::create_directory_symlink(root / targetRel, root / rel);
  }
  void cpu(int c, int package, int core) const {
    write("devices/system/cpu/cpu" + std::to_string(c) + "/topology/physical_package_id", std::to_string(package));
    write("devices/system/cpu/cpu" + std::to_string(c) + "/topology/core_id", std::to_string(core));
  }
};

// 2 packages x 2 cores x 2 threads: CPUs 0-3 on node 0, 4-7 on node 1.
void twoSockets(const FakeSysfs& s) {
  s.write("devices/system/cpu/online", "0-7\n");
  for (int c = 0; c < 8; ++c) s.cpu(c, c / 4, (c / 2) % 2);
  s.write("devices/system/node/node0/cpulist", "0-3\n");
  s.write("devices/system/node/node0/meminfo", "Node 0 MemTotal:       1048576 kB\nNode 0 MemFree: 5 kB\n");
  s.write("devices/system/node/node1/cpulist", "4-7\n");
  s.write("devices/system/node/possible", "0-1\n");  // not a node directory
}

void devices(const FakeSysfs& s) {
  const std::string pci = "devices/pci0000:00/";
  // Ethernet behind a virtio function (the link ends below the PCI address).
  s.link("class/net/eth0/device", pci + "0000:00:03.0/virtio2");
  s.write(pci + "0000:00:03.0/numa_node", "1\n");
  s.write("class/net/eth0/speed", "25000\n");
  // A port whose link is down reports -1.
  s.link("class/net/eth1/device", pci + "0000:00:04.0");
  s.write(pci + "0000:00:04.0/numa_node", "0\n");
  s.write("class/net/eth1/speed", "-1\n");
  // Virtual ports: no device link.
  s.write("class/net/lo/speed", "");
  s.write("class/net/veth0/speed", "10000\n");
  // InfiniBand: port 1 down, port 2 active; its IPoIB port ib0.
  s.link("class/infiniband/mlx5_0/device", pci + "0000:3b:00.0");
  s.write(pci + "0000:3b:00.0/numa_node", "0\n");
  s.write("class/infiniband/mlx5_0/ports/1/state", "1: DOWN\n");
  s.write("class/infiniband/mlx5_0/ports/1/rate", "10 Gb/sec (4X SDR)\n");
  s.write("class/infiniband/mlx5_0/ports/2/state", "4: ACTIVE\n");
  s.write("class/infiniband/mlx5_0/ports/2/rate", "200 Gb/sec (4X HDR)\n");
  s.link("class/net/ib0/device", pci + "0000:3b:00.0");
  // PCI functions: an NVIDIA 3D controller, an NVIDIA audio function, an AMD GPU.
  s.write("bus/pci/devices/0000:ca:00.0/vendor", "0x10de\n");
  s.write("bus/pci/devices/0000:ca:00.0/class", "0x030200\n");
  s.write("bus/pci/devices/0000:ca:00.0/numa_node", "1\n");
  s.write("bus/pci/devices/0000:ca:00.1/vendor", "0x10de\n");
  s.write("bus/pci/devices/0000:ca:00.1/class", "0x040300\n");
  s.write("bus/pci/devices/0000:cb:00.0/vendor", "0x1002\n");
  s.write("bus/pci/devices/0000:cb:00.0/class", "0x030000\n");
}

}  // namespace

TEST_CASE("sysfs: packages, cores, PUs and NUMA nodes", "[topo][sysfs]") {
  FakeSysfs s;
  twoSockets(s);
  auto r = readSysfs(s.root.string(), DetectOptions{});
  REQUIRE(r.isOk());
  const HostTopology& t = r.value();
  CHECK(t.source == "sysfs at " + s.root.string());
  CHECK(t.packages == 2);
  CHECK(t.cores == 4);
  CHECK(t.pus == 8);
  REQUIRE(t.numa.size() == 2);
  CHECK(t.numa[0].index == 0);
  CHECK(t.numa[0].cpus == std::vector<int>{0, 1, 2, 3});
  CHECK(t.numa[0].memoryBytes == 1073741824ull);
  CHECK(t.numa[1].cpus == std::vector<int>{4, 5, 6, 7});
  CHECK(t.numa[1].memoryBytes == 0);
  CHECK(t.devices.empty());  // not asked for
  CHECK(numaOfCpus(t, {5, 6}) == 1);
}

TEST_CASE("sysfs: network ports, InfiniBand adapters and NVIDIA GPUs", "[topo][sysfs]") {
  FakeSysfs s;
  twoSockets(s);
  devices(s);
  auto r = readSysfs(s.root.string(), DetectOptions{true});
  REQUIRE(r.isOk());
  const HostTopology& t = r.value();
  CHECK(t.devices.size() == 4);  // mlx5_0, eth0, eth1, the GPU
  const PciDevice* ib = findDevice(t, "0000:3b:00.0");
  REQUIRE(ib != nullptr);
  CHECK(ib->kind == DeviceKind::InfiniBand);
  CHECK(ib->osName == "mlx5_0");  // not ib0, its IPoIB port
  CHECK(ib->numa == 0);
  CHECK(ib->linkMbps == 200000);  // the active port's rate
  const PciDevice* eth0 = findDevice(t, "0000:00:03.0");
  REQUIRE(eth0 != nullptr);
  CHECK(eth0->kind == DeviceKind::Ethernet);
  CHECK(eth0->osName == "eth0");
  CHECK(eth0->numa == 1);
  CHECK(eth0->linkMbps == 25000);
  const PciDevice* eth1 = findDevice(t, "0000:00:04.0");
  REQUIRE(eth1 != nullptr);
  CHECK(eth1->linkMbps == -1);
  const PciDevice* gpu = findDevice(t, "0000:ca:00.0");
  REQUIRE(gpu != nullptr);
  CHECK(gpu->kind == DeviceKind::Gpu);
  CHECK(gpu->numa == 1);
  CHECK(findDevice(t, "0000:ca:00.1") == nullptr);  // NVIDIA, not a GPU
  CHECK(findDevice(t, "0000:cb:00.0") == nullptr);  // a GPU, not NVIDIA's
  CHECK(portMbps(s.root.string(), DeviceKind::Ethernet, "veth0") == 10000);
  CHECK(portMbps(s.root.string(), DeviceKind::Ethernet, "lo") == -1);
  CHECK(portMbps(s.root.string(), DeviceKind::Ethernet, "nothere") == -1);
  CHECK(portMbps(s.root.string(), DeviceKind::Gpu, "eth0") == -1);
}

TEST_CASE("sysfs: a kernel without NUMA is one node; its devices are on it", "[topo][sysfs]") {
  FakeSysfs s;
  s.write("devices/system/cpu/online", "0-1\n");
  s.link("class/net/eth0/device", "devices/pci0000:00/0000:00:03.0");
  s.write("devices/pci0000:00/0000:00:03.0/numa_node", "-1\n");
  auto r = readSysfs(s.root.string(), DetectOptions{true});
  REQUIRE(r.isOk());
  REQUIRE(r.value().numa.size() == 1);
  CHECK(r.value().numa[0].cpus == std::vector<int>{0, 1});
  CHECK(r.value().packages == 0);  // no topology files: not known
  REQUIRE(r.value().devices.size() == 1);
  CHECK(r.value().devices[0].numa == 0);
}

TEST_CASE("sysfs: no CPUs is an error naming the file", "[topo][sysfs]") {
  FakeSysfs s;
  auto r = readSysfs(s.root.string(), DetectOptions{});
  REQUIRE_FALSE(r.isOk());
  CHECK_THAT(r.status().message(), Catch::Contains("devices/system/cpu/online"));
  // A malformed cpulist leaves that node without CPUs, not a crash.
  s.write("devices/system/cpu/online", "0-1\n");
  s.write("devices/system/node/node0/cpulist", "zero\n");
  auto bad = readSysfs(s.root.string(), DetectOptions{});
  REQUIRE(bad.isOk());
  REQUIRE(bad.value().numa.size() == 1);
  CHECK(bad.value().numa[0].cpus.empty());
}

TEST_CASE("sysfs: this machine's view agrees with itself", "[topo][sysfs]") {
  auto r = readSysfs("/sys", DetectOptions{true});
  REQUIRE(r.isOk());
  const HostTopology& t = r.value();
  CHECK(t.source == "sysfs");
  REQUIRE_FALSE(t.numa.empty());
  int cpusInNodes = 0;
  for (const NumaNode& n : t.numa) cpusInNodes += static_cast<int>(n.cpus.size());
  CHECK(cpusInNodes >= 1);
  // Every CPU this process may run on is in some node.
  for (int c : boundCpus()) {
    INFO("CPU " << c);
    CHECK(numaOfCpus(t, {c}) >= 0);
  }
}
