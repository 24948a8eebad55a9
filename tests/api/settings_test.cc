// settings_test.cc — the table of every COLL_* setting (base/settings.h).
#include <catch2/catch.hpp>

#include <cstdlib>
#include <stdexcept>
#include <string>

#include "coll/base/settings.h"
#include "scoped_env.h"

namespace settings = coll::settings;
using colltest::ScopedEnv;
using Catch::Matchers::Contains;

TEST_CASE("every default in the table is a valid value of its own setting", "[settings]") {
  for (const settings::Setting& s : settings::table()) {
    INFO(s.name);
    CHECK(std::string(s.name).rfind("COLL_", 0) == 0);
    CHECK(settings::find(s.name) == &s);
    if (*s.fallback == '\0') continue;
    ScopedEnv e(s.name, s.fallback);
    CHECK(settings::checkAll().isOk());
  }
}

TEST_CASE("a bad value fails with the table's message, naming the variable and the value", "[settings]") {
  struct Bad {
    const char* name;
    const char* value;
    const char* says;
  };
  for (const Bad& b : {Bad{"COLL_NCHANNELS", "17", "COLL_NCHANNELS='17' must be in [1, 16]"},
                       Bad{"COLL_NCHANNELS", "two", "COLL_NCHANNELS='two' must be in [1, 16]"},
                       Bad{"COLL_SHM_SLOT_SIZE", "1K", "COLL_SHM_SLOT_SIZE='1K' must be in [4K, 64M]"},
                       Bad{"COLL_TRANSPORT", "ib", "COLL_TRANSPORT='ib' must be one of auto|shm|socket"},
                       Bad{"COLL_TIMEOUT", "5min", "COLL_TIMEOUT='5min'"},
                       Bad{"COLL_PORT_RATE", "fast", "COLL_PORT_RATE='fast' is not a link rate"},
                       Bad{"COLL_COST_BETA", "-3", "COLL_COST_BETA='-3' must be a number of seconds"},
                       Bad{"COLL_DEBUG", "LOUD", "COLL_DEBUG='LOUD' must be one of"}}) {
    INFO(b.name << "=" << b.value);
    ScopedEnv e(b.name, b.value);
    coll::Status s = settings::checkAll();
    REQUIRE_FALSE(s.isOk());
    CHECK(s.code() == collInvalidArgument);
    CHECK_THAT(s.message(), Contains(b.says));
  }
}

TEST_CASE("values: unset gives the default, choices in any case give the table's spelling", "[settings]") {
  CHECK(settings::durationMsOr("COLL_TIMEOUT").value() == 300000);
  CHECK(settings::intOr("COLL_NCHANNELS").value() == 2);
  CHECK(settings::bytesOr("COLL_SHM_SLOT_SIZE").value() == 256 * 1024);
  CHECK_FALSE(settings::readText("COLL_ALGO").has_value());
  {
    ScopedEnv e("COLL_TRANSPORT", "Socket");
    CHECK(settings::choiceOr("COLL_TRANSPORT").value() == "socket");
  }
  {
    ScopedEnv e("COLL_TIMEOUT", "");  // empty is unset
    CHECK(settings::durationMsOr("COLL_TIMEOUT").value() == 300000);
  }
  ScopedEnv e("COLL_TIMEOUT", "2s");
  CHECK(settings::durationMsOr("COLL_TIMEOUT").value() == 2000);
}

TEST_CASE("the value ranks compare is spelt one way: defaults, sizes and choices alike", "[settings]") {
  const std::string unset = settings::canonicalValue("COLL_DEVICE_PROGRAM").value();
  {
    ScopedEnv e("COLL_DEVICE_PROGRAM", "AUTO");
    CHECK(settings::canonicalValue("COLL_DEVICE_PROGRAM").value() == unset);
  }
  ScopedEnv e("COLL_DEVICE_STAGE_BYTES", "32M");
  const std::string m = settings::canonicalValue("COLL_DEVICE_STAGE_BYTES").value();
  ScopedEnv f("COLL_DEVICE_STAGE_BYTES", "33554432");
  CHECK(settings::canonicalValue("COLL_DEVICE_STAGE_BYTES").value() == m);
  ScopedEnv g("COLL_DEVICE_STAGE_BYTES", "64M");
  CHECK(settings::canonicalValue("COLL_DEVICE_STAGE_BYTES").value() != m);
  ScopedEnv h("COLL_DEVICE_LL_BYTES", "lots");
  CHECK_FALSE(settings::canonicalValue("COLL_DEVICE_LL_BYTES").isOk());
}

TEST_CASE("reading a setting the table does not have, or as another type, is a programming error", "[settings]") {
  CHECK_THROWS_AS(settings::readText("COLL_NO_SUCH_SETTING"), std::logic_error);
  CHECK_THROWS_AS(settings::readInt("COLL_TRANSPORT"), std::logic_error);
}

TEST_CASE("the table prints itself: values in force and a Markdown table", "[settings]") {
  ScopedEnv e("COLL_NCHANNELS", "4");
  const std::string now = settings::describeInForce();
  CHECK_THAT(now, Contains("COLL_NCHANNELS") && Contains("environment") && Contains("300s"));
  const std::string md = settings::markdownTable();
  for (const settings::Setting& s : settings::table()) CHECK_THAT(md, Contains(std::string("`") + s.name + "`"));
  CHECK_THAT(md, Contains("auto\\|shm\\|socket"));  // a '|' of a choice is escaped in the table
}
