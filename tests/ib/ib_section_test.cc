// ib_section_test.cc — colltopo's RDMA section (tools/topo/ib_section.h):
// what it prints for devices and ports, the GPUs near each device, no
// devices, and a library that cannot be loaded.
#include <catch2/catch.hpp>

#include <string>

#include "ib_section.h"
#include "scoped_env.h"

using namespace coll;
using Catch::Matchers::Contains;

TEST_CASE("colltopo's RDMA section: devices, ports, the automatic GID and the GPUs near", "[ib][colltopo]") {
  ib::IbDevice d;
  d.name = "mlx5_0";
  d.guid = 0x0c42a10300123456ull;
  d.pciAddress = "0000:3b:00.0";
  ib::IbPort roce;
  roce.port = 1;
  roce.state = IBV_PORT_ACTIVE;
  roce.active = true;
  roce.link = ib::LinkLayer::Ethernet;
  roce.lanes = 4;
  roce.laneGbps = 50;
  roce.rateGbps = 200;
  roce.speedName = "HDR";
  roce.mtuBytes = 4096;
  roce.gids = {{0, {0xfe, 0x80}, ib::GidType::IbOrRoceV1, false},
               {3, {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 10, 0, 0, 1}, ib::GidType::RoceV2, true}};
  roce.autoGidIndex = 3;
  ib::IbPort ibPort;
  ibPort.port = 2;
  ibPort.state = IBV_PORT_DOWN;
  ibPort.link = ib::LinkLayer::InfiniBand;
  ibPort.lid = 9;
  d.ports = {roce, ibPort};
  ib::IbDevice broken;
  broken.name = "mlx5_1";
  broken.error = "ibv_open_device failed: Permission denied";

  topo::HostTopology host;
  host.devices = {{topo::DeviceKind::Gpu, "0000:3d:00.0", "", "", 1},
                  {topo::DeviceKind::Gpu, "0000:5e:00.0", "", "", 0},
                  {topo::DeviceKind::InfiniBand, "0000:3b:00.0", "mlx5_0", "", 1}};
  const std::string out = topo::describeIbDevices({d, broken}, "libibverbs.so.1", &host);
  CHECK_THAT(out, Contains("RDMA devices: 2 (libibverbs loaded from libibverbs.so.1)"));
  // sysfs gave no NUMA node: hwloc's, by PCI address.
  CHECK_THAT(out, Contains("mlx5_0: GUID 0c42:a103:0012:3456, PCI 0000:3b:00.0, NUMA node 1, near GPUs: 0000:3d:00.0\n"));
  CHECK_THAT(out, Contains("port 1: ACTIVE, Ethernet, 200 Gb/s (4X HDR), MTU 4096, 2 GIDs, auto GID index 3: "
                           "0000:0000:0000:0000:0000:ffff:0a00:0001 (RoCE v2, IPv4)"));
  CHECK_THAT(out, Contains("port 2: DOWN, InfiniBand, rate unknown, MTU unknown, LID 9, 0 GIDs, auto GID index 0 "
                           "(no such entry)"));
  CHECK_THAT(out, Contains("mlx5_1: GUID 0000:0000:0000:0000, PCI unknown, NUMA node unknown\n"
                           "    not usable: ibv_open_device failed: Permission denied"));
}

TEST_CASE("colltopo's RDMA section: no devices, and a library that cannot be loaded", "[ib][colltopo]") {
  CHECK(topo::describeIbDevices({}, "/x/libibverbs.so.1", nullptr) ==
        "no RDMA devices (libibverbs loaded from /x/libibverbs.so.1)\n");
  {
    colltest::ScopedEnv e("COLL_IBVERBS_LIB", "/nonexistent/libverbs.so");
    CHECK_THAT(topo::describeIbHost(nullptr),
               Contains("libibverbs not loadable: cannot load verbs library '/nonexistent/libverbs.so'"));
  }
  {
    colltest::ScopedEnv e("COLL_IB_HCA", "mlx5:0");
    CHECK_THAT(topo::describeIbHost(nullptr), Contains("COLL_IB_HCA='mlx5:0'"));
  }
  // This machine through libibverbs.so.1 (no RDMA devices in CI).
  CHECK_THAT(topo::describeIbHost(nullptr), Contains("(libibverbs loaded from libibverbs.so.1)"));
}
