// env_test.cc — parsing of sizes, durations and rates in COLL_* variables.
#include <catch2/catch.hpp>

#include <unistd.h>

#include <cstdlib>

#include "coll/base/backoff.h"
#include "coll/base/env.h"

using coll::env::parseDurationMs;
using coll::env::parseRateBitsPerSec;
using coll::env::parseSize;

TEST_CASE("sizes take K/M/G suffixes and reject junk", "[env]") {
  CHECK(parseSize("X", "4096").value() == 4096);
  CHECK(parseSize("X", "64K").value() == 64 * 1024);
  CHECK(parseSize("X", "1M").value() == 1 << 20);
  CHECK(parseSize("X", "2G").value() == size_t{2} << 30);
  CHECK_FALSE(parseSize("X", "12Q").isOk());
  CHECK_FALSE(parseSize("X", "-1").isOk());
  CHECK_FALSE(parseSize("X", "").isOk());
  CHECK_FALSE(parseSize("X", "99999999999999999999G").isOk());
}

TEST_CASE("durations: seconds by default, ms and s suffixes", "[env]") {
  CHECK(parseDurationMs("T", "30").value() == 30000);
  CHECK(parseDurationMs("T", "1.5s").value() == 1500);
  CHECK(parseDurationMs("T", "250ms").value() == 250);
  CHECK_FALSE(parseDurationMs("T", "5min").isOk());
  CHECK_FALSE(parseDurationMs("T", "abc").isOk());
}

TEST_CASE("link rates as tc writes them (COLL_PORT_RATE, what tools/netsim passes on)", "[env]") {
  CHECK(parseRateBitsPerSec("R", "1gbit").value() == 1e9);
  CHECK(parseRateBitsPerSec("R", "100mbit").value() == 1e8);
  CHECK(parseRateBitsPerSec("R", "2.5Gbit").value() == 2.5e9);
  CHECK(parseRateBitsPerSec("R", "500kbit").value() == 5e5);
  CHECK(parseRateBitsPerSec("R", "1gibit").value() == 1073741824.0);
  CHECK(parseRateBitsPerSec("R", "10mbps").value() == 8e7);  // bps: bytes per second, as in tc
  CHECK(parseRateBitsPerSec("R", "1e9").value() == 1e9);     // a bare number: bits per second
  CHECK(parseRateBitsPerSec("R", "800bit").value() == 800);
  for (const char* bad : {"", "fast", "0", "-1gbit", "1gb", "1xbit", "1kibps2", "1gibt"}) {
    auto r = parseRateBitsPerSec("COLL_PORT_RATE", bad);
    CHECK_FALSE(r.isOk());
    CHECK(r.status().message().find("COLL_PORT_RATE") != std::string::npos);
  }
}

TEST_CASE("spin budget: none over sockets when ranks outnumber the CPUs, 16 on shm, COLL_SPIN overrides",
          "[env]") {
  unsetenv("COLL_SPIN");
  const long cpus = sysconf(_SC_NPROCESSORS_ONLN);
  const int over = static_cast<int>(cpus) + 1;
  CHECK(coll::defaultSpinBudget(over, true) == 0);
  CHECK(coll::defaultSpinBudget(over, false) == 16);
  CHECK(coll::defaultSpinBudget(1, true) == 4000);
  CHECK(coll::defaultSpinBudget(1, false) == 4000);
  setenv("COLL_SPIN", "7", 1);
  CHECK(coll::defaultSpinBudget(over, true) == 7);
  unsetenv("COLL_SPIN");
}
