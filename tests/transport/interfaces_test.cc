// Interface selection (COLL_SOCKET_IFNAME grammar, defaults, errors) on
// made-up interface lists, so the test does not depend on this machine.
#include <catch2/catch.hpp>

#include "coll/base/interfaces.h"

using coll::net::Interface;

namespace {

Interface itf(const char* name, const char* addr, bool loopback = false) {
  Interface i;
  i.name = name;
  auto a = coll::net::parseAddress(addr);
  REQUIRE(a.isOk());
  i.address = a.value();
  i.loopback = loopback;
  return i;
}

std::vector<Interface> machine() {
  return {itf("lo", "127.0.0.1:0", true), itf("docker0", "172.17.0.1:0"), itf("eth0", "10.0.0.2:0"),
          itf("eth1", "[fd00::2]:0"), itf("ib0", "192.168.5.2:0"), itf("lo", "[::1]:0", true)};
}

}  // namespace

TEST_CASE("COLL_SOCKET_IFNAME grammar: prefixes, exact names, exclusion", "[net]") {
  auto f = coll::net::parseIfnameFilter("eth,ib");
  CHECK(coll::net::matches(f, "eth0"));
  CHECK(coll::net::matches(f, "ib1"));
  CHECK_FALSE(coll::net::matches(f, "lo"));
  auto ex = coll::net::parseIfnameFilter("^docker,lo");
  CHECK(ex.exclude);
  CHECK(coll::net::matches(ex, "eth0"));
  CHECK_FALSE(coll::net::matches(ex, "docker0"));
  CHECK_FALSE(coll::net::matches(ex, "lo"));
  auto exact = coll::net::parseIfnameFilter("=eth0");
  CHECK(coll::net::matches(exact, "eth0"));
  CHECK_FALSE(coll::net::matches(exact, "eth00"));
  auto notExact = coll::net::parseIfnameFilter("^=eth0");
  CHECK_FALSE(coll::net::matches(notExact, "eth0"));
  CHECK(coll::net::matches(notExact, "eth01"));
}

TEST_CASE("default interface: loopback on one host, else the first real NIC with IPv4 first", "[net]") {
  auto local = coll::net::chooseInterface(machine(), "", 0, true);
  REQUIRE(local.isOk());
  CHECK(local.value().name == "lo");
  CHECK(local.value().address.toString() == "127.0.0.1:0");
  auto remote = coll::net::chooseInterface(machine(), "", 0, false);
  REQUIRE(remote.isOk());
  CHECK(remote.value().name == "eth0");  // docker0 skipped, IPv4 before eth1's IPv6
  auto v6 = coll::net::chooseInterface(machine(), "", 6, false);
  REQUIRE(v6.isOk());
  CHECK(v6.value().name == "eth1");
  auto v6local = coll::net::chooseInterface(machine(), "", 6, true);
  REQUIRE(v6local.isOk());
  CHECK(v6local.value().address.toString() == "[::1]:0");
}

TEST_CASE("an explicit COLL_SOCKET_IFNAME wins, also for loopback", "[net]") {
  auto ib = coll::net::chooseInterface(machine(), "ib", 0, false);
  REQUIRE(ib.isOk());
  CHECK(ib.value().name == "ib0");
  auto lo = coll::net::chooseInterface(machine(), "lo", 0, false);
  REQUIRE(lo.isOk());
  CHECK(lo.value().loopback);
  auto notEth = coll::net::chooseInterface(machine(), "^eth,lo", 0, false);
  REQUIRE(notEth.isOk());
  CHECK(notEth.value().name == "docker0");
}

TEST_CASE("a name that matches nothing fails and lists what exists", "[net]") {
  auto r = coll::net::chooseInterface(machine(), "enp", 0, false);
  REQUIRE_FALSE(r.isOk());
  CHECK(r.status().code() == collInvalidUsage);
  CHECK_THAT(r.status().message(), Catch::Contains("COLL_SOCKET_IFNAME=enp"));
  CHECK_THAT(r.status().message(), Catch::Contains("eth0 (10.0.0.2:0)"));
  CHECK_THAT(r.status().message(), Catch::Contains("ib0 (192.168.5.2:0)"));
  auto v6 = coll::net::chooseInterface(machine(), "ib", 6, false);
  REQUIRE_FALSE(v6.isOk());
  CHECK_THAT(v6.status().message(), Catch::Contains("IPv6"));
}

TEST_CASE("this machine lists at least loopback", "[net]") {
  auto all = coll::net::listInterfaces();
  REQUIRE(all.isOk());
  bool lo = false;
  for (const auto& i : all.value()) lo = lo || i.loopback;
  CHECK(lo);
}

TEST_CASE("addresses: the port is plain digits, nothing else", "[net]") {
  CHECK(coll::net::parseAddress("127.0.0.1:80").isOk());
  CHECK(coll::net::parseAddress("127.0.0.1:00080").isOk());
  CHECK(coll::net::parseAddress("[::1]:65535").isOk());
  for (const char* bad : {"127.0.0.1:+80", "127.0.0.1: 80", "127.0.0.1:-0", "127.0.0.1:65536", "127.0.0.1:",
                          "127.0.0.1:8o", "[::1]:99999999999999999999"}) {
    INFO(bad);
    CHECK_FALSE(coll::net::parseAddress(bad).isOk());
  }
  CHECK_FALSE(coll::net::parseAddress(std::string("127.0.0.1:80\0junk", 17)).isOk());
}
