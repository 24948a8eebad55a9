// ib_devices_test.cc — devices and ports (transports/ib/ib_devices.h): the
// verbs encodings, the automatic GID index, sysfs facts from a made-up
// tree, and a whole listing through a fake verbs table.
#include <catch2/catch.hpp>

#include <endian.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>

#include "ib/ib_devices.h"

using namespace coll::ib;
namespace fs = std::filesystem;

namespace {

std::array<uint8_t, 16> ipv4Gid(uint8_t a, uint8_t b, uint8_t c, uint8_t d) {
  return {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, a, b, c, d};
}
std::array<uint8_t, 16> linkLocalGid(uint8_t last) {
  return {0xfe, 0x80, 0, 0, 0, 0, 0, 0, 0x0e, 0x42, 0xa1, 0xff, 0xfe, 0x12, 0x34, last};
}

// A sysfs tree of its own under a temporary directory, removed after.
struct FakeSysfs {
  fs::path root;
  FakeSysfs() {
    root = fs::temp_directory_path() / ("coll_ib_sysfs_" + std::to_string(getpid()));
    fs::remove_all(root);
  }
  ~FakeSysfs() { fs::remove_all(root); }
  void write(const std::string& rel, const std::string& text) {
    const fs::path p = root / rel;
    fs::create_directories(p.parent_path());
    std::ofstream(p) << text << "\n";
  }
  // class/infiniband/<dev>/device -> devices/pci0000:00/<pci>, with numa_node.
  void pciDevice(const std::string& dev, const std::string& pci, int numa) {
    const fs::path target = root / "devices/pci0000:00" / pci;
    fs::create_directories(target);
    std::ofstream(target / "numa_node") << numa << "\n";
    fs::create_directories(root / "class/infiniband" / dev);
    fs::create_directory_symlink(fs::path("../../../devices/pci0000:00") / pci,
                                 root / "class/infiniband" / dev / "device");
  }
};

}  // namespace

TEST_CASE("active_width and active_speed decode to lanes x Gb/s per lane, SDR to XDR", "[ib][devices]") {
  CHECK(widthLanes(1) == 1);
  CHECK(widthLanes(2) == 4);
  CHECK(widthLanes(4) == 8);
  CHECK(widthLanes(8) == 12);
  CHECK(widthLanes(16) == 2);
  CHECK(widthLanes(0) == 0);
  CHECK(widthLanes(3) == 0);
  struct Speed {
    uint32_t code;
    double gbps;
    const char* name;
  };
  for (const Speed& s : {Speed{1, 2.5, "SDR"}, Speed{2, 5, "DDR"}, Speed{4, 10, "QDR"}, Speed{8, 10, "FDR10"},
                         Speed{16, 14, "FDR"}, Speed{32, 25, "EDR"}, Speed{64, 50, "HDR"}, Speed{128, 100, "NDR"},
                         Speed{256, 200, "XDR"}}) {
    INFO(s.name);
    CHECK(speedLaneGbps(s.code) == s.gbps);
    CHECK(std::string(speedName(s.code)) == s.name);
  }
  CHECK(speedLaneGbps(0) == 0);
  CHECK(speedLaneGbps(3) == 0);
  // What sysfs prints: "56 Gb/sec (4X FDR)", "100 Gb/sec (4X EDR)", "400 Gb/sec (4X NDR)".
  CHECK(widthLanes(2) * speedLaneGbps(16) == 56);
  CHECK(widthLanes(2) * speedLaneGbps(32) == 100);
  CHECK(widthLanes(2) * speedLaneGbps(128) == 400);
  CHECK(widthLanes(16) * speedLaneGbps(64) == 100);  // 2X HDR
}

TEST_CASE("MTU codes, GID text and GUID text", "[ib][devices]") {
  CHECK(mtuBytes(IBV_MTU_256) == 256);
  CHECK(mtuBytes(IBV_MTU_1024) == 1024);
  CHECK(mtuBytes(IBV_MTU_4096) == 4096);
  CHECK(mtuBytes(0) == 0);
  CHECK(mtuBytes(6) == 0);
  CHECK(formatGid(ipv4Gid(10, 0, 0, 1)) == "0000:0000:0000:0000:0000:ffff:0a00:0001");
  CHECK(isIpv4Mapped(ipv4Gid(10, 0, 0, 1)));
  CHECK(!isIpv4Mapped(linkLocalGid(1)));
  CHECK(formatGuid(0x0c42a10300123456ull) == "0c42:a103:0012:3456");
  CHECK(parseGidType("RoCE v2") == GidType::RoceV2);
  CHECK(parseGidType("IB/RoCE v1") == GidType::IbOrRoceV1);
  CHECK(parseGidType("") == GidType::Unknown);
}

TEST_CASE("the automatic GID index: RoCE v2 of an IPv4 address, else the first v2, else the first; IB: 0",
          "[ib][devices]") {
  const GidEntry v1ll{0, linkLocalGid(1), GidType::IbOrRoceV1, false};
  const GidEntry v2ll{1, linkLocalGid(1), GidType::RoceV2, false};
  const GidEntry v1ip{2, ipv4Gid(10, 0, 0, 1), GidType::IbOrRoceV1, true};
  const GidEntry v2ip{3, ipv4Gid(10, 0, 0, 1), GidType::RoceV2, true};
  CHECK(autoGidIndex(LinkLayer::Ethernet, {v1ll, v2ll, v1ip, v2ip}) == 3);
  CHECK(autoGidIndex(LinkLayer::Ethernet, {v1ll, v2ll, v1ip}) == 1);
  CHECK(autoGidIndex(LinkLayer::Ethernet, {v1ll, v1ip}) == 0);
  CHECK(autoGidIndex(LinkLayer::Ethernet, {v1ip}) == 2);
  CHECK(autoGidIndex(LinkLayer::Ethernet, {}) == 0);
  CHECK(autoGidIndex(LinkLayer::InfiniBand, {v1ll, v2ip}) == 0);
  // No type known (no sysfs gid_attrs): the IPv4-mapped entry.
  const GidEntry unknownLl{0, linkLocalGid(1), GidType::Unknown, false};
  const GidEntry unknownIp{1, ipv4Gid(127, 0, 0, 1), GidType::Unknown, true};
  CHECK(autoGidIndex(LinkLayer::Ethernet, {unknownLl, unknownIp}) == 1);
  CHECK(autoGidIndex(LinkLayer::Ethernet, {unknownLl}) == 0);
}

TEST_CASE("sysfs gives GID types, PCI address and NUMA node; the GID index follows", "[ib][devices]") {
  FakeSysfs sys;
  sys.pciDevice("mlx5_0", "0000:3b:00.0", 1);
  const std::string types = "class/infiniband/mlx5_0/ports/1/gid_attrs/types/";
  sys.write(types + "0", "IB/RoCE v1");
  sys.write(types + "1", "RoCE v2");
  sys.write(types + "2", "IB/RoCE v1");
  sys.write(types + "3", "RoCE v2");
  IbDevice dev;
  dev.name = "mlx5_0";
  IbPort roce;
  roce.port = 1;
  roce.link = LinkLayer::Ethernet;
  roce.gids = {{0, linkLocalGid(1), GidType::Unknown, false}, {1, linkLocalGid(1), GidType::Unknown, false},
               {2, ipv4Gid(10, 0, 0, 1), GidType::Unknown, true}, {3, ipv4Gid(10, 0, 0, 1), GidType::Unknown, true},
               {4, ipv4Gid(10, 0, 0, 2), GidType::Unknown, true}};  // no types/4: unknown
  IbPort ib;
  ib.port = 2;
  ib.link = LinkLayer::InfiniBand;
  ib.gids = {{0, linkLocalGid(2), GidType::Unknown, false}};
  dev.ports = {roce, ib};
  addSysfsFacts(sys.root.string(), dev);
  CHECK(dev.pciAddress == "0000:3b:00.0");
  CHECK(dev.numa == 1);
  const auto& g = dev.ports[0].gids;
  CHECK(g[0].type == GidType::IbOrRoceV1);
  CHECK(g[1].type == GidType::RoceV2);
  CHECK(g[3].type == GidType::RoceV2);
  CHECK(g[4].type == GidType::Unknown);
  CHECK(dev.ports[0].autoGidIndex == 3);
  CHECK(dev.ports[1].gids[0].type == GidType::IbOrRoceV1);
  CHECK(dev.ports[1].autoGidIndex == 0);

  SECTION("without the IPv4 v2 entry the first v2 is chosen") {
    fs::remove(sys.root / types / "3");
    addSysfsFacts(sys.root.string(), dev);
    CHECK(dev.ports[0].autoGidIndex == 1);
  }
  SECTION("a device sysfs does not know keeps unknowns") {
    IbDevice other;
    other.name = "rxe0";
    addSysfsFacts(sys.root.string(), other);
    CHECK(other.pciAddress.empty());
    CHECK(other.numa == -1);
  }
}

// ---- a whole listing through a fake verbs table ----
namespace fake {

ibv_device devices[2];
ibv_context contexts[2];
int opened = 0;

int index(ibv_device* d) { return d == &devices[0] ? 0 : 1; }
ibv_device** getDeviceList(int* n) {
  static ibv_device* list[3] = {&devices[0], &devices[1], nullptr};
  *n = 2;
  return list;
}
void freeDeviceList(ibv_device**) {}
const char* getDeviceName(ibv_device* d) { return index(d) == 0 ? "mlx5_0" : "mlx5_1"; }
__be64 getDeviceGuid(ibv_device* d) { return htobe64(0x0c42a10300000000ull + index(d)); }
ibv_context* openDevice(ibv_device* d) {
  if (index(d) == 1) {
    errno = EACCES;
    return nullptr;
  }
  ++opened;
  contexts[0].device = d;
  return &contexts[0];
}
int closeDevice(ibv_context*) {
  --opened;
  return 0;
}
int queryDevice(ibv_context*, ibv_device_attr* a) {
  a->phys_port_cnt = 2;
  return 0;
}
// Port 1: active RoCE 4x HDR (200 Gb/s), MTU 4096.  Port 2: a down IB port.
int queryPort(ibv_context*, uint8_t port, _compat_ibv_port_attr* compat) {
  auto* a = reinterpret_cast<ibv_port_attr*>(compat);
  a->state = port == 1 ? IBV_PORT_ACTIVE : IBV_PORT_DOWN;
  a->link_layer = port == 1 ? IBV_LINK_LAYER_ETHERNET : IBV_LINK_LAYER_INFINIBAND;
  a->active_width = 2;
  a->active_speed = port == 1 ? 64 : 32;
  a->active_mtu = port == 1 ? IBV_MTU_4096 : IBV_MTU_2048;
  a->lid = 7;
  a->gid_tbl_len = port == 1 ? 4 : 1;
  return 0;
}
int queryGid(ibv_context*, uint8_t port, int i, ibv_gid* gid) {
  std::memset(gid->raw, 0, 16);
  if (port == 1 && i == 2) return 0;  // an unused entry
  const auto g = port == 1 && i == 3 ? ipv4Gid(192, 168, 1, 5) : linkLocalGid(static_cast<uint8_t>(i));
  std::memcpy(gid->raw, g.data(), 16);
  return 0;
}

}  // namespace fake

TEST_CASE("listing through a verbs table: ports, rates, GIDs, and a device that cannot be opened",
          "[ib][devices]") {
  FakeSysfs sys;
  sys.pciDevice("mlx5_0", "0000:c1:00.1", 0);
  sys.write("class/infiniband/mlx5_0/ports/1/gid_attrs/types/0", "IB/RoCE v1");
  sys.write("class/infiniband/mlx5_0/ports/1/gid_attrs/types/1", "RoCE v2");
  sys.write("class/infiniband/mlx5_0/ports/1/gid_attrs/types/3", "RoCE v2");
  VerbsApi api;
  api.path = "fake";
  api.getDeviceList = fake::getDeviceList;
  api.freeDeviceList = fake::freeDeviceList;
  api.getDeviceName = fake::getDeviceName;
  api.getDeviceGuid = fake::getDeviceGuid;
  api.openDevice = fake::openDevice;
  api.closeDevice = fake::closeDevice;
  api.queryDevice = fake::queryDevice;
  api.queryPortExported = fake::queryPort;
  api.queryGid = fake::queryGid;
  auto r = listIbDevices(api, sys.root.string());
  REQUIRE(r.isOk());
  CHECK(fake::opened == 0);
  REQUIRE(r.value().size() == 2);
  const IbDevice& d = r.value()[0];
  CHECK(d.name == "mlx5_0");
  CHECK(d.guid == 0x0c42a10300000000ull);
  CHECK(d.pciAddress == "0000:c1:00.1");
  CHECK(d.numa == 0);
  CHECK(d.error.empty());
  REQUIRE(d.ports.size() == 2);
  const IbPort& p1 = d.ports[0];
  CHECK(p1.active);
  CHECK(p1.link == LinkLayer::Ethernet);
  CHECK(p1.rateGbps == 200);
  CHECK(std::string(p1.speedName) == "HDR");
  CHECK(p1.mtuBytes == 4096);
  CHECK(p1.lid == 0);  // RoCE has no LID
  REQUIRE(p1.gids.size() == 3);  // entry 2 is empty
  CHECK(p1.gids[2].index == 3);
  CHECK(p1.gids[2].ipv4Mapped);
  CHECK(p1.gids[2].type == GidType::RoceV2);
  CHECK(p1.autoGidIndex == 3);
  const IbPort& p2 = d.ports[1];
  CHECK(!p2.active);
  CHECK(p2.link == LinkLayer::InfiniBand);
  CHECK(p2.rateGbps == 100);
  CHECK(p2.lid == 7);
  CHECK(p2.autoGidIndex == 0);
  const IbDevice& bad = r.value()[1];
  CHECK(bad.name == "mlx5_1");
  CHECK(bad.ports.empty());
  CHECK(bad.error.find("ibv_open_device failed") != std::string::npos);
}
