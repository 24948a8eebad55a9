// Devices, ports, GIDs, the exported symbol set, status strings, and the
// errors for what the emulator does not offer.
#include <dlfcn.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <string>

#include "endpoint.h"
#include "verbs_api.h"

using namespace verbs_emu_test;

namespace {

struct EnvVar {
  EnvVar(const char* name, const char* value) : name_(name) { setenv(name, value, 1); }
  ~EnvVar() { unsetenv(name_); }
  const char* name_;
};

ibv_gid gidOf(ibv_device* dev, int index) {
  ibv_context* ctx = verbs().open_device(dev);
  ibv_gid gid{};
  REQUIRE(ctx);
  REQUIRE(verbs().query_gid(ctx, 1, index, &gid) == 0);
  verbs().close_device(ctx);
  return gid;
}

}  // namespace

TEST_CASE("verbs emu: one RoCE NIC by default, with its port, rate and GIDs", "[verbs_emu]") {
  int n = -1;
  ibv_device** list = verbs().get_device_list(&n);
  REQUIRE(list);
  REQUIRE(n == 1);
  CHECK(list[1] == nullptr);
  CHECK(std::string(verbs().get_device_name(list[0])) == "emu_0");
  CHECK(verbs().get_device_guid(list[0]) != 0);
  ibv_context* ctx = verbs().open_device(list[0]);
  REQUIRE(ctx);
  ibv_device_attr dev{};
  REQUIRE(verbs().query_device(ctx, &dev) == 0);
  CHECK(dev.phys_port_cnt == 1);
  CHECK(dev.max_qp_wr >= 1024);
  ibv_port_attr port{};
  REQUIRE(queryPort(ctx, &port) == 0);
  CHECK(port.state == IBV_PORT_ACTIVE);
  CHECK(port.link_layer == IBV_LINK_LAYER_ETHERNET);
  CHECK(port.active_width == 2);    // 4x
  CHECK(port.active_speed == 128);  // NDR: 4 x 100 = 400 Gb/s
  CHECK(port.gid_tbl_len == 2);
  ibv_gid g0{}, g1{};
  REQUIRE(verbs().query_gid(ctx, 1, 0, &g0) == 0);
  REQUIRE(verbs().query_gid(ctx, 1, 1, &g1) == 0);
  CHECK(g0.raw[0] == 0xfe);
  CHECK(g0.raw[1] == 0x80);
  const uint8_t v4mapped[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
  CHECK(std::memcmp(g1.raw, v4mapped, 12) == 0);
  CHECK(g1.raw[12] == 127);
  ibv_gid none{};
  CHECK(verbs().query_gid(ctx, 1, 2, &none) == -1);
  CHECK(queryPort(ctx, &port) == 0);
  ibv_port_attr bad{};
  CHECK(verbs().query_port(ctx, 2, reinterpret_cast<_compat_ibv_port_attr*>(&bad)) == EINVAL);
  verbs().close_device(ctx);
  verbs().free_device_list(list);
}

TEST_CASE("verbs emu: COLL_VERBS_EMU_NICS=2 shows two NICs with their own GIDs", "[verbs_emu]") {
  EnvVar nics("COLL_VERBS_EMU_NICS", "2");
  int n = 0;
  ibv_device** list = verbs().get_device_list(&n);
  REQUIRE(list);
  REQUIRE(n == 2);
  CHECK(std::string(verbs().get_device_name(list[0])) == "emu_0");
  CHECK(std::string(verbs().get_device_name(list[1])) == "emu_1");
  CHECK(verbs().get_device_guid(list[0]) != verbs().get_device_guid(list[1]));
  CHECK(std::memcmp(gidOf(list[0], 1).raw, gidOf(list[1], 1).raw, 16) != 0);
  verbs().free_device_list(list);
}

TEST_CASE("verbs emu: link layer, rate and host come from the environment", "[verbs_emu]") {
  SECTION("InfiniBand ports have a LID") {
    EnvVar link("COLL_VERBS_EMU_LINK", "ib");
    EnvVar rate("COLL_VERBS_EMU_GBPS", "100");
    ibv_device** list = verbs().get_device_list(nullptr);
    REQUIRE(list);
    ibv_context* ctx = verbs().open_device(list[0]);
    REQUIRE(ctx);
    ibv_port_attr port{};
    REQUIRE(queryPort(ctx, &port) == 0);
    CHECK(port.link_layer == IBV_LINK_LAYER_INFINIBAND);
    CHECK(port.lid != 0);
    CHECK(port.active_speed == 32);  // EDR: 4 x 25 = 100 Gb/s
    verbs().close_device(ctx);
    verbs().free_device_list(list);
  }
  SECTION("simulated hosts differ in GIDs") {
    ibv_gid a{}, b{};
    {
      EnvVar host("COLL_VERBS_EMU_HOST", "node-a");
      ibv_device** list = verbs().get_device_list(nullptr);
      a = gidOf(list[0], 0);
      verbs().free_device_list(list);
    }
    {
      EnvVar host("COLL_VERBS_EMU_HOST", "node-b");
      ibv_device** list = verbs().get_device_list(nullptr);
      b = gidOf(list[0], 0);
      verbs().free_device_list(list);
    }
    CHECK(std::memcmp(a.raw, b.raw, 16) != 0);
  }
  SECTION("a bad value is refused") {
    EnvVar nics("COLL_VERBS_EMU_NICS", "3");
    errno = 0;
    CHECK(verbs().get_device_list(nullptr) == nullptr);
    CHECK(errno == EINVAL);
  }
}

TEST_CASE("verbs emu: exports exactly the loader's symbols", "[verbs_emu]") {
  void* lib = dlopen(COLL_VERBS_EMU_LIB, RTLD_NOW | RTLD_LOCAL);
  REQUIRE(lib);
  for (int i = 0; i < kExportedCount; ++i) CHECK(dlsym(lib, kExportedNames[i]) != nullptr);
  // Internals stay hidden: nothing of libstdc++ or of the emulator leaks.
  CHECK(dlsym(lib, "ibv_post_send") == nullptr);
  CHECK(dlsym(lib, "_ZN4coll9verbs_emu7processEv") == nullptr);
  dlclose(lib);
}

TEST_CASE("verbs emu: status strings are rdma-core's", "[verbs_emu]") {
  CHECK(std::string(verbs().wc_status_str(IBV_WC_SUCCESS)) == "success");
  CHECK(std::string(verbs().wc_status_str(IBV_WC_REM_ACCESS_ERR)) == "remote access error");
  CHECK(std::string(verbs().wc_status_str(IBV_WC_WR_FLUSH_ERR)) == "Work Request Flushed Error");
  CHECK(std::string(verbs().wc_status_str(static_cast<ibv_wc_status>(99))) == "unknown");
  // Word for word with the installed libibverbs, when there is one.
  void* real = dlopen("libibverbs.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!real) return;
  auto str = reinterpret_cast<const char* (*)(ibv_wc_status)>(dlsym(real, "ibv_wc_status_str"));
  REQUIRE(str);
  for (int s = 0; s <= IBV_WC_TM_RNDV_INCOMPLETE + 1; ++s) {
    INFO("status " << s);
    CHECK(std::string(verbs().wc_status_str(static_cast<ibv_wc_status>(s))) ==
          str(static_cast<ibv_wc_status>(s)));
  }
  dlclose(real);
}

TEST_CASE("verbs emu: what is not emulated fails as a provider without it does", "[verbs_emu]") {
  Endpoint ep;
  REQUIRE(ep.open());
  ibv_qp_init_attr ud{};
  ud.send_cq = ep.send_cq;
  ud.recv_cq = ep.recv_cq;
  ud.qp_type = IBV_QPT_UD;
  ud.cap.max_send_wr = 1;
  errno = 0;
  CHECK(verbs().create_qp(ep.pd, &ud) == nullptr);
  CHECK(errno == EOPNOTSUPP);
  errno = 0;
  CHECK(verbs().reg_dmabuf_mr(ep.pd, 0, 4096, 0, 3, IBV_ACCESS_LOCAL_WRITE) == nullptr);
  CHECK(errno == EOPNOTSUPP);
  // Objects in use cannot go: EBUSY, as from the kernel.
  char buf[64];
  ibv_mr* mr = verbs().reg_mr(ep.pd, buf, sizeof(buf), IBV_ACCESS_LOCAL_WRITE);
  REQUIRE(mr);
  CHECK(verbs().dealloc_pd(ep.pd) == EBUSY);
  CHECK(verbs().destroy_cq(ep.send_cq) == EBUSY);
  // Remote write without local write is invalid in verbs.
  CHECK(verbs().reg_mr(ep.pd, buf, sizeof(buf), IBV_ACCESS_REMOTE_WRITE) == nullptr);
  verbs().dereg_mr(mr);
  ep.close();
}

TEST_CASE("verbs emu: the registry file goes with the last process", "[verbs_emu]") {
  verbs();  // sets the fabric name
  const std::string path = std::string("/dev/shm/coll_verbs_emu.") + std::getenv("COLL_VERBS_EMU_FABRIC");
  Endpoint ep;
  REQUIRE(ep.open());
  CHECK(access(path.c_str(), F_OK) == 0);
  ep.close();
  CHECK(access(path.c_str(), F_OK) != 0);
}
