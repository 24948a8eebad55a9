// status_test.cc — how errors carry their breadcrumbs (util/status.h).
#include <catch2/catch.hpp>

#include "coll/base/status.h"

using coll::makeError;
using coll::Status;

TEST_CASE("breadcrumbs go after the message, whose own brackets stay whole", "[status]") {
  Status s = makeError(collInvalidArgument, "alpha 'abc' must be a number of seconds in [0, 10]");
  s.addTrace("cost_file.cc", 113);
  CHECK(s.message() == "alpha 'abc' must be a number of seconds in [0, 10] [cost_file.cc:113]");
  s.addTrace("comm.cc", 291).addTrace("api_comm.cc", 50);
  CHECK(s.message() == "alpha 'abc' must be a number of seconds in [0, 10] [cost_file.cc:113 < comm.cc:291 < api_comm.cc:50]");
  CHECK(s.cause() == "alpha 'abc' must be a number of seconds in [0, 10]");
  CHECK(s.code() == collInvalidArgument);
}

TEST_CASE("withCause keeps the code and the breadcrumbs", "[status]") {
  Status s = makeError(collInvalidUsage, "sizes differ");
  CHECK(s.cause() == "sizes differ");
  Status plain = s.withCause(s.cause() + " (RANK=1)");
  CHECK(plain.message() == "sizes differ (RANK=1)");
  s.addTrace("bootstrap.cc", 7);
  Status more = s.withCause(s.cause() + " (RANK=1)");
  CHECK(more.code() == collInvalidUsage);
  CHECK(more.message() == "sizes differ (RANK=1) [bootstrap.cc:7]");
  more.addTrace("api_comm.cc", 9);
  CHECK(more.message() == "sizes differ (RANK=1) [bootstrap.cc:7 < api_comm.cc:9]");
}
