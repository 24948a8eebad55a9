// ib_settings_test.cc — COLL_NET and COLL_IB_* through the settings table
// (transports/ib/ib_settings.h): defaults, values, and bad values naming
// their variable.
#include <catch2/catch.hpp>

#include <string>

#include "ib/ib_settings.h"
#include "scoped_env.h"

using namespace coll::ib;
using colltest::ScopedEnv;
using Catch::Matchers::Contains;

TEST_CASE("IB settings: the table's defaults when unset", "[ib][settings]") {
  auto s = ibSettingsFromTable();
  REQUIRE(s.isOk());
  CHECK(s.value().net == NetChoice::Auto);
  CHECK(s.value().hca.entries.empty());
  CHECK(s.value().gidIndex == -1);
  CHECK(s.value().timeout == 20);
  CHECK(s.value().retryCnt == 7);
  CHECK(s.value().serviceLevel == 0);
  CHECK(s.value().trafficClass == 0);
  CHECK(s.value().qpsPerConnection == 1);
}

TEST_CASE("IB settings: values from the environment", "[ib][settings]") {
  ScopedEnv a("COLL_NET", "IB");
  ScopedEnv b("COLL_IB_HCA", "=mlx5_0:1");
  ScopedEnv c("COLL_IB_GID_INDEX", "3");
  ScopedEnv d("COLL_IB_TIMEOUT", "22");
  ScopedEnv e("COLL_IB_RETRY_CNT", "0");
  ScopedEnv f("COLL_IB_SL", "15");
  ScopedEnv g("COLL_IB_TC", "106");
  ScopedEnv h("COLL_IB_QPS_PER_CONNECTION", "4");
  ScopedEnv i("COLL_IBVERBS_LIB", "/opt/emu/libibverbs.so");
  auto s = ibSettingsFromTable();
  REQUIRE(s.isOk());
  CHECK(s.value().net == NetChoice::Ib);
  CHECK(s.value().hca.exact);
  CHECK(s.value().hca.entries.size() == 1);
  CHECK(s.value().gidIndex == 3);
  CHECK(s.value().timeout == 22);
  CHECK(s.value().retryCnt == 0);
  CHECK(s.value().serviceLevel == 15);
  CHECK(s.value().trafficClass == 106);
  CHECK(s.value().qpsPerConnection == 4);
  CHECK(s.value().verbsLib == "/opt/emu/libibverbs.so");
}

TEST_CASE("IB settings: a bad value fails, naming its variable", "[ib][settings]") {
  struct Bad {
    const char* name;
    const char* value;
  };
  for (const Bad& b : {Bad{"COLL_NET", "rdma"}, Bad{"COLL_IB_HCA", "mlx5_0:x"}, Bad{"COLL_IB_GID_INDEX", "-2"},
                       Bad{"COLL_IB_TIMEOUT", "0"}, Bad{"COLL_IB_TIMEOUT", "32"}, Bad{"COLL_IB_RETRY_CNT", "8"},
                       Bad{"COLL_IB_SL", "16"}, Bad{"COLL_IB_TC", "256"}, Bad{"COLL_IB_QPS_PER_CONNECTION", "0"},
                       Bad{"COLL_IB_QPS_PER_CONNECTION", "17"}, Bad{"COLL_IB_SL", "one"}}) {
    INFO(b.name << "=" << b.value);
    ScopedEnv e(b.name, b.value);
    auto s = ibSettingsFromTable();
    REQUIRE(!s.isOk());
    CHECK(s.status().code() == collInvalidArgument);
    CHECK_THAT(s.status().message(), Contains(std::string(b.name) + "='" + b.value + "'"));
  }
}
