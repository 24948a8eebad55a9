// readHwloc, exportXml and detectHost (topo/detect.h): hwloc's synthetic
// machines, the made-up two-socket XML file, this machine written and read
// back, and COLL_TOPO_FILE's errors.  Built without hwloc: the same calls
// must say so.
#include <stdlib.h>
#include <unistd.h>

#include <catch2/catch.hpp>

#include "topo/detect.h"

using namespace coll::topo;

namespace {

const std::string kTwoSockets = std::string(COLL_TOPO_TEST_DIR) + "/two_sockets.xml";

// Sets COLL_TOPO_FILE for one scope.
struct TopoFileEnv {
  explicit TopoFileEnv(const char* value) {
    if (value != nullptr) setenv("COLL_TOPO_FILE", value, 1);
    else unsetenv("COLL_TOPO_FILE");
  }
  ~TopoFileEnv() { unsetenv("COLL_TOPO_FILE"); }
};

}  // namespace

#if COLL_TEST_HAVE_HWLOC

TEST_CASE("hwloc: a synthetic machine, CPUs numbered in order", "[topo][hwloc]") {
  REQUIRE(builtWithHwloc());
  auto r = readHwloc("synthetic:pack:2 numa:1 core:2 pu:2", DetectOptions{});
  REQUIRE(r.isOk());
  const HostTopology& t = r.value();
  CHECK(t.source == "hwloc " COLL_TEST_HWLOC_VERSION " from synthetic:pack:2 numa:1 core:2 pu:2");
  CHECK(t.packages == 2);
  CHECK(t.cores == 4);
  CHECK(t.pus == 8);
  REQUIRE(t.numa.size() == 2);
  CHECK(t.numa[0].cpus == std::vector<int>{0, 1, 2, 3});
  CHECK(t.numa[1].index == 1);
  CHECK(t.numa[1].cpus == std::vector<int>{4, 5, 6, 7});
  CHECK(numaOfCpus(t, {4, 7}) == 1);
  CHECK(numaOfCpus(t, {3, 4}) == -1);
}

TEST_CASE("hwloc: an XML file with GPUs and network ports", "[topo][hwloc]") {
  auto r = readHwloc(kTwoSockets, DetectOptions{true});
  REQUIRE(r.isOk());
  const HostTopology& t = r.value();
  CHECK(t.packages == 2);
  REQUIRE(t.numa.size() == 2);
  CHECK(t.numa[1].cpus == std::vector<int>{2, 3});
  CHECK(t.numa[1].memoryBytes == (64ull << 30));
  REQUIRE(t.devices.size() == 3);
  const PciDevice* gpu = findDevice(t, "0000:ca:00.0");
  REQUIRE(gpu != nullptr);
  CHECK(gpu->kind == DeviceKind::Gpu);
  CHECK(gpu->numa == 1);
  CHECK(gpu->model == "GH100 [H100 SXM5 80GB]");
  CHECK(gpu->pciGBps == Approx(63.015385));
  const PciDevice* ib = findDevice(t, "0000:cb:00.0");
  REQUIRE(ib != nullptr);
  CHECK(ib->kind == DeviceKind::InfiniBand);
  CHECK(ib->osName == "mlx5_0");  // its IPoIB port ib0 is the same adapter
  CHECK(ib->numa == 1);
  CHECK(ib->linkMbps == 200000);
  const PciDevice* eth = findDevice(t, "0000:17:00.0");
  REQUIRE(eth != nullptr);
  CHECK(eth->kind == DeviceKind::Ethernet);
  CHECK(eth->osName == "eth9");
  CHECK(eth->numa == 0);
  CHECK(eth->linkMbps == 100000);
  // Without devices: CPUs and nodes only.
  auto cpusOnly = readHwloc(kTwoSockets, DetectOptions{});
  REQUIRE(cpusOnly.isOk());
  CHECK(cpusOnly.value().devices.empty());
  CHECK(cpusOnly.value().numa.size() == 2);
}

TEST_CASE("hwloc: this machine, written as XML and read back, is the same machine", "[topo][hwloc]") {
  char path[] = "/tmp/coll_topo_export_XXXXXX";
  const int fd = mkstemp(path);
  REQUIRE(fd >= 0);
  close(fd);
  REQUIRE(exportXml(path).isOk());
  auto live = readHwloc("", DetectOptions{true});
  auto back = readHwloc(path, DetectOptions{true});
  unlink(path);
  REQUIRE(live.isOk());
  REQUIRE(back.isOk());
  CHECK(back.value().packages == live.value().packages);
  CHECK(back.value().cores == live.value().cores);
  CHECK(back.value().pus == live.value().pus);
  REQUIRE(back.value().numa.size() == live.value().numa.size());
  for (size_t i = 0; i < live.value().numa.size(); ++i) {
    CHECK(back.value().numa[i].index == live.value().numa[i].index);
    CHECK(back.value().numa[i].cpus == live.value().numa[i].cpus);
  }
  REQUIRE(back.value().devices.size() == live.value().devices.size());
  for (size_t i = 0; i < live.value().devices.size(); ++i) {
    CHECK(back.value().devices[i].busId == live.value().devices[i].busId);
    CHECK(back.value().devices[i].osName == live.value().devices[i].osName);
    CHECK(back.value().devices[i].linkMbps == live.value().devices[i].linkMbps);  // the rate travels in the file
  }
}

TEST_CASE("COLL_TOPO_FILE: picks the machine; bad values are errors that name it", "[topo][hwloc]") {
  {
    TopoFileEnv env("synthetic:numa:2 core:1 pu:1");
    auto r = detectHost(DetectOptions{});
    REQUIRE(r.isOk());
    CHECK(r.value().numa.size() == 2);
    auto cached = detectHostCached(DetectOptions{});
    REQUIRE(cached.isOk());
    CHECK(cached.value().numa.size() == 2);
  }
  {
    TopoFileEnv env(nullptr);  // this machine, through the cache too
    auto r = detectHostCached(DetectOptions{});
    REQUIRE(r.isOk());
    CHECK(r.value().source == "hwloc " COLL_TEST_HWLOC_VERSION);
  }
  {
    TopoFileEnv env("/nonexistent/machine.xml");
    auto r = detectHost(DetectOptions{});
    REQUIRE_FALSE(r.isOk());
    CHECK_THAT(r.status().message(), Catch::Contains("COLL_TOPO_FILE='/nonexistent/machine.xml': cannot read"));
  }
  {
    TopoFileEnv env("synthetic:pack:x");
    auto r = detectHost(DetectOptions{});
    REQUIRE_FALSE(r.isOk());
    CHECK_THAT(r.status().message(), Catch::Contains("hwloc rejects the synthetic description 'pack:x'"));
  }
  {
    // A file that is not XML.
    TopoFileEnv env(COLL_TOPO_TEST_DIR "/CMakeLists.txt");
    auto r = detectHost(DetectOptions{});
    REQUIRE_FALSE(r.isOk());
    CHECK_THAT(r.status().message(), Catch::Contains("CMakeLists.txt"));
  }
}

#else

TEST_CASE("without hwloc: files and synthetic machines say they need it; sysfs reads this one", "[topo][hwloc]") {
  CHECK_FALSE(builtWithHwloc());
  auto r = readHwloc(kTwoSockets, DetectOptions{});
  REQUIRE_FALSE(r.isOk());
  CHECK_THAT(r.status().message(), Catch::Contains("needs hwloc"));
  CHECK_FALSE(exportXml("/tmp/unused.xml").isOk());
  TopoFileEnv env(nullptr);
  auto live = detectHost(DetectOptions{});
  REQUIRE(live.isOk());
  CHECK(live.value().source == "sysfs");
}

#endif
