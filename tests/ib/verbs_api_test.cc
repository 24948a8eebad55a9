// verbs_api_test.cc — the dlopened verbs table (transports/ib/verbs_api.h):
// this machine's libibverbs, a file that is not there, libraries that lack
// a required or an optional symbol.
#include <catch2/catch.hpp>

#include <string>
#include <thread>
#include <vector>

#include "ib/ib_devices.h"
#include "ib/verbs_api.h"

using namespace coll::ib;
using Catch::Matchers::Contains;

TEST_CASE("libibverbs.so.1 loads, and lists this machine's devices (here: none) without error", "[ib][verbs]") {
  auto api = verbsApi("");
  REQUIRE(api.isOk());
  const VerbsApi& v = *api.value();
  CHECK(v.path == kDefaultVerbsLib);
  CHECK(v.getDeviceList != nullptr);
  CHECK(v.queryPortExported != nullptr);
  CHECK(v.createQp != nullptr);
  CHECK(v.regDmabufMr != nullptr);  // rdma-core 44 has it
  CHECK(std::string(v.wcStatusStr(IBV_WC_SUCCESS)) == "success");
  auto devices = listIbDevices(v);
  REQUIRE(devices.isOk());
  for (const IbDevice& d : devices.value()) CHECK(!d.name.empty());
}

TEST_CASE("the table is loaded once per library and shared between threads' callers", "[ib][verbs]") {
  // Threads racing for a library not loaded before all get one table.
  std::vector<const VerbsApi*> got(8);
  std::vector<std::thread> threads;
  for (size_t i = 0; i < got.size(); ++i)
    threads.emplace_back([&got, i] {
      auto r = verbsApi(COLL_IB_STUB_NO_DMABUF);
      got[i] = r.isOk() ? r.value() : nullptr;
    });
  for (auto& t : threads) t.join();
  REQUIRE(got[0] != nullptr);
  for (const VerbsApi* p : got) CHECK(p == got[0]);
  auto a = verbsApi("");
  auto b = verbsApi(kDefaultVerbsLib);
  REQUIRE(a.isOk());
  REQUIRE(b.isOk());
  CHECK(a.value() == b.value());
}

TEST_CASE("a library that does not exist fails, naming it and COLL_IBVERBS_LIB", "[ib][verbs]") {
  auto api = verbsApi("/nonexistent/libibverbs-missing.so");
  REQUIRE(!api.isOk());
  CHECK(api.status().code() == collSystemError);
  CHECK_THAT(api.status().message(), Contains("/nonexistent/libibverbs-missing.so"));
  CHECK_THAT(api.status().message(), Contains("COLL_IBVERBS_LIB"));
}

TEST_CASE("a library that is not libibverbs fails, naming its first missing symbol", "[ib][verbs]") {
  auto api = verbsApi("libc.so.6");
  REQUIRE(!api.isOk());
  CHECK_THAT(api.status().message(), Contains("'libc.so.6' lacks ibv_get_device_list"));
}

TEST_CASE("a library without ibv_create_qp fails, naming it", "[ib][verbs]") {
  auto api = verbsApi(COLL_IB_STUB_NO_CREATE_QP);
  REQUIRE(!api.isOk());
  CHECK_THAT(api.status().message(), Contains("lacks ibv_create_qp"));
  CHECK_THAT(api.status().message(), Contains(COLL_IB_STUB_NO_CREATE_QP));
}

TEST_CASE("ibv_reg_dmabuf_mr is optional: a library without it loads, with no dma-buf registration",
          "[ib][verbs]") {
  auto api = verbsApi(COLL_IB_STUB_NO_DMABUF);
  REQUIRE(api.isOk());
  CHECK(api.value()->regDmabufMr == nullptr);
  CHECK(api.value()->regMr != nullptr);
  auto devices = listIbDevices(*api.value());
  REQUIRE(devices.isOk());
  CHECK(devices.value().empty());
}
