// env_test.cc — parsing of sizes and durations in COLL_* variables.
#include <catch2/catch.hpp>

#include "util/env.h"

using coll::env::parseDurationMs;
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
