// host_topology.h's pure functions: CPU lists, the NUMA node of a set of
// CPUs, the text colltopo and the init log print.
#include <catch2/catch.hpp>

#include "topo/host_topology.h"

using namespace coll::topo;

TEST_CASE("cpu lists: the kernel's format read and written", "[topo]") {
  std::vector<int> cpus;
  REQUIRE(parseCpuList("0-3,8,10-11\n", cpus));
  CHECK(cpus == std::vector<int>{0, 1, 2, 3, 8, 10, 11});
  CHECK(formatCpuList(cpus) == "0-3,8,10-11");
  REQUIRE(parseCpuList(" 5 ", cpus));
  CHECK(cpus == std::vector<int>{5});
  REQUIRE(parseCpuList("", cpus));  // a node without CPUs
  CHECK(cpus.empty());
  CHECK(formatCpuList({}).empty());
  // Repeats and overlaps are one CPU each, in order.
  REQUIRE(parseCpuList("4,0-2,1", cpus));
  CHECK(cpus == std::vector<int>{0, 1, 2, 4});
  CHECK(formatCpuList({1, 3, 5}) == "1,3,5");
}

TEST_CASE("cpu lists: anything else is refused", "[topo]") {
  std::vector<int> cpus;
  for (const char* bad : {"a", "1-", "-1", "3-1", "1,,2", "1,", "1 2", "0x3", "12345678"}) {
    INFO(bad);
    CHECK_FALSE(parseCpuList(bad, cpus));
  }
}

HostTopology twoNodes() {
  HostTopology t;
  t.source = "test";
  t.packages = 2;
  t.cores = 4;
  t.pus = 8;
  t.numa = {NumaNode{0, {0, 1, 4, 5}, 1ull << 30}, NumaNode{1, {2, 3, 6, 7}, 0}};
  return t;
}

TEST_CASE("the NUMA node of a set of CPUs: the one holding all of them", "[topo]") {
  const HostTopology t = twoNodes();
  CHECK(numaOfCpus(t, {0}) == 0);
  CHECK(numaOfCpus(t, {4, 5, 0}) == 0);
  CHECK(numaOfCpus(t, {2, 7}) == 1);
  CHECK(numaOfCpus(t, {1, 2}) == -1);  // spans both
  CHECK(numaOfCpus(t, {8}) == -1);     // no node lists it
  CHECK(numaOfCpus(t, {}) == -1);
  CHECK(numaOfCpus(HostTopology{}, {0}) == -1);
}

TEST_CASE("summary and description name every part", "[topo]") {
  HostTopology t = twoNodes();
  t.devices.push_back(PciDevice{DeviceKind::Gpu, "0000:ca:00.0", "", "H100", 1, 63.0, -1});
  t.devices.push_back(PciDevice{DeviceKind::Ethernet, "0000:17:00.0", "eth9", "", -1, 0, 100000});
  CHECK(summary(t) == "test: 2 packages, 4 cores, 8 PUs, 2 NUMA nodes, 1 GPU, 1 network adapter");
  const std::string d = describe(t);
  CHECK_THAT(d, Catch::Contains("NUMA node 0: CPUs 0-1,4-5, 1.0 GiB\n"));
  CHECK_THAT(d, Catch::Contains("NUMA node 1: CPUs 2-3,6-7\n"));
  CHECK_THAT(d, Catch::Contains("GPU 0000:ca:00.0 \"H100\", NUMA node 1, PCI link 63.0 GB/s\n"));
  CHECK_THAT(d, Catch::Contains("Ethernet 0000:17:00.0 eth9, NUMA node unknown, port 100000 Mb/s\n"));
  CHECK(summary(HostTopology{"empty", 0, 0, 0, {}, {}}) ==
        "empty: ? packages, ? cores, ? PUs, 0 NUMA nodes, 0 GPUs, 0 network adapters");
}
