// hca_filter_test.cc — COLL_IB_HCA's grammar (NCCL_IB_HCA's): prefixes,
// exact names, exclusion, ports, and malformed values.
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "ib/hca_filter.h"

using namespace coll::ib;
using Catch::Matchers::Contains;

namespace {

// mlx5_0 and mlx5_1 with two ports, mlx5_10 and bnxt_re0 with one.
const std::vector<PortRef> kPorts = {{"mlx5_0", 1}, {"mlx5_0", 2}, {"mlx5_1", 1}, {"mlx5_1", 2},
                                     {"mlx5_10", 1}, {"bnxt_re0", 1}};

std::vector<PortRef> select(const char* text) {
  auto f = parseHcaFilter(text);
  REQUIRE(f.isOk());
  return selectPorts(f.value(), kPorts);
}

}  // namespace

TEST_CASE("COLL_IB_HCA unset or empty selects every port", "[ib][hca]") { CHECK(select("") == kPorts); }

TEST_CASE("COLL_IB_HCA names are prefixes unless = makes them exact", "[ib][hca]") {
  CHECK(select("mlx5") == std::vector<PortRef>(kPorts.begin(), kPorts.begin() + 5));
  CHECK(select("mlx5_1") == std::vector<PortRef>{{"mlx5_1", 1}, {"mlx5_1", 2}, {"mlx5_10", 1}});
  CHECK(select("=mlx5_1") == std::vector<PortRef>{{"mlx5_1", 1}, {"mlx5_1", 2}});
  CHECK(select("=mlx5").empty());
}

TEST_CASE("COLL_IB_HCA :port takes one port; entries combine, in the devices' order", "[ib][hca]") {
  CHECK(select("mlx5_0:2") == std::vector<PortRef>{{"mlx5_0", 2}});
  CHECK(select("=mlx5_1:1,mlx5_0:1") == std::vector<PortRef>{{"mlx5_0", 1}, {"mlx5_1", 1}});
  CHECK(select("bnxt_re0:1,mlx5_1:2") == std::vector<PortRef>{{"mlx5_1", 2}, {"bnxt_re0", 1}});
  CHECK(select("mlx5_0:3").empty());
}

TEST_CASE("COLL_IB_HCA ^ excludes what it lists; ^= excludes exact names", "[ib][hca]") {
  CHECK(select("^mlx5") == std::vector<PortRef>{{"bnxt_re0", 1}});
  CHECK(select("^mlx5_1") == std::vector<PortRef>{{"mlx5_0", 1}, {"mlx5_0", 2}, {"bnxt_re0", 1}});
  CHECK(select("^=mlx5_1") == std::vector<PortRef>{{"mlx5_0", 1}, {"mlx5_0", 2}, {"mlx5_10", 1}, {"bnxt_re0", 1}});
  CHECK(select("^mlx5_0:1,bnxt") ==
        std::vector<PortRef>{{"mlx5_0", 2}, {"mlx5_1", 1}, {"mlx5_1", 2}, {"mlx5_10", 1}});
}

TEST_CASE("COLL_IB_HCA parses into its entries", "[ib][hca]") {
  auto f = parseHcaFilter("^=mlx5_0:1,mlx5_1");
  REQUIRE(f.isOk());
  CHECK(f.value().exclude);
  CHECK(f.value().exact);
  REQUIRE(f.value().entries.size() == 2);
  CHECK(f.value().entries[0].name == "mlx5_0");
  CHECK(f.value().entries[0].port == 1);
  CHECK(f.value().entries[1].name == "mlx5_1");
  CHECK(f.value().entries[1].port == -1);
  CHECK(parseHcaFilter("mlx5_0:255").value().entries[0].port == 255);
}

TEST_CASE("malformed COLL_IB_HCA values fail, naming the variable and the entry", "[ib][hca]") {
  struct Bad {
    const char* text;
    const char* says;
  };
  for (const Bad& b : {Bad{"^", "entry '' has no device name"}, Bad{"=", "entry '' has no device name"},
                       Bad{"^=", "entry '' has no device name"}, Bad{"mlx5_0,", "entry '' has no device name"},
                       Bad{",mlx5_0", "entry '' has no device name"}, Bad{"a,,b", "entry '' has no device name"},
                       Bad{":1", "entry ':1' has no device name"},
                       Bad{"mlx5_0:", "entry 'mlx5_0:' has a port that is not a number"},
                       Bad{"mlx5_0:x", "entry 'mlx5_0:x' has a port that is not a number"},
                       Bad{"mlx5_0:-1", "has a port that is not a number"},
                       Bad{"mlx5_0:1:2", "has a port that is not a number"},
                       Bad{"mlx5_0:+1", "has a port that is not a number"},
                       Bad{"mlx5_0:0", "has a port outside 1..255"}, Bad{"mlx5_0:256", "has a port outside 1..255"},
                       Bad{"mlx5_0:99999", "has a port that is not a number"},
                       Bad{"mlx5_0, mlx5_1", "entry ' mlx5_1' has white space"},
                       Bad{"bnxt,=x", "entry '=x' has white space, '=' or '^'"},
                       Bad{"=^mlx5", "'^' and '=' go once, at the front"}}) {
    INFO(b.text);
    auto f = parseHcaFilter(b.text);
    REQUIRE(!f.isOk());
    CHECK(f.status().code() == collInvalidArgument);
    CHECK_THAT(f.status().message(), Contains(std::string("COLL_IB_HCA='") + b.text + "'"));
    CHECK_THAT(f.status().message(), Contains(b.says));
  }
}
