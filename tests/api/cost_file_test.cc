// cost_file_test.cc — the calibration file (COLL_COST_FILE) parser and how
// its alpha/beta replace a transport's stated cost.
#include <catch2/catch.hpp>

#include <cstdio>
#include <cstdlib>
#include <string>

#include "tuner/cost_file.h"

using coll::sched::LinkCost;
using coll::tune::CostSettings;
using coll::tune::parseCostFile;
using coll::tune::resolveCost;
using Catch::Matchers::Contains;

namespace {

const char* kGood =
    "# libcoll cost calibration\n"
    "format 1\n"
    "transport shm\n"
    "alpha 4.5e-07\n"
    "beta 1.25e-10\n"
    "host devbox\n"
    "nranks 2\n"
    "date 2026-11-22T20:00:00Z\n"
    "method pingpong 8 B median of 2000 half round trips; stream 64 MiB median of 5\n"
    "fit_alpha 5e-07\n"
    "\n";

std::string errorOf(const std::string& text) {
  auto r = parseCostFile(text, "/tmp/cost.txt");
  return r.isOk() ? std::string("(parsed)") : r.status().message();
}

}  // namespace

TEST_CASE("a good cost file parses", "[costfile]") {
  auto r = parseCostFile(kGood, "/tmp/cost.txt");
  REQUIRE(r.isOk());
  const auto& f = r.value();
  CHECK(f.transport == "shm");
  CHECK(f.cost.alpha == 4.5e-07);
  CHECK(f.cost.beta == 1.25e-10);
  CHECK(f.host == "devbox");
  CHECK(f.nranks == 2);
  CHECK(f.method.find("64 MiB") != std::string::npos);
  CHECK(f.path == "/tmp/cost.txt");
}

TEST_CASE("each malformed cost file is an error naming the file and line", "[costfile]") {
  const std::string head = "format 1\ntransport shm\n";
  CHECK_THAT(errorOf(""), Contains("/tmp/cost.txt") && Contains("empty"));
  CHECK_THAT(errorOf("transport shm\nformat 1\n"), Contains("line 1") && Contains("format 1"));
  CHECK_THAT(errorOf("format 2\n"), Contains("line 1") && Contains("format '2'"));
  CHECK_THAT(errorOf("format 1\ntransport carrier-pigeon\n"), Contains("line 2") && Contains("carrier-pigeon"));
  CHECK_THAT(errorOf(head + "alpha\nbeta 1e-10\n"), Contains("/tmp/cost.txt line 3") && Contains("no value"));
  CHECK_THAT(errorOf(head + "alpha fast\nbeta 1e-10\n"), Contains("line 3") && Contains("alpha 'fast'"));
  CHECK_THAT(errorOf(head + "alpha 1e-6x\nbeta 1e-10\n"), Contains("line 3"));
  CHECK_THAT(errorOf(head + "alpha -1e-6\nbeta 1e-10\n"), Contains("line 3"));
  CHECK_THAT(errorOf(head + "alpha nan\nbeta 1e-10\n"), Contains("line 3"));
  CHECK_THAT(errorOf(head + "alpha 1e-6\nbeta 0\n"), Contains("line 4") && Contains("beta '0'"));
  CHECK_THAT(errorOf(head + "alpha 1e-6\nbeta inf\n"), Contains("line 4"));
  CHECK_THAT(errorOf(head + "alpha 1e-6\nalpha 2e-6\nbeta 1e-10\n"), Contains("line 4") && Contains("twice"));
  CHECK_THAT(errorOf(head + "alpha 1e-6\nbeta 1e-10\nnranks two\n"), Contains("line 5") && Contains("nranks"));
  CHECK_THAT(errorOf(head + "beta 1e-10\n"), Contains("no 'alpha'"));
  CHECK_THAT(errorOf(head + "alpha 1e-6\n"), Contains("no 'beta'"));
  CHECK_THAT(errorOf("format 1\nalpha 1e-6\nbeta 1e-10\n"), Contains("no 'transport'"));
}

TEST_CASE("a missing cost file is an error naming it", "[costfile]") {
  auto r = coll::tune::loadCostFile("/nonexistent/dir/cost.txt");
  REQUIRE_FALSE(r.isOk());
  CHECK_THAT(r.status().message(), Contains("/nonexistent/dir/cost.txt"));
}

TEST_CASE("the file replaces the matching transport's cost; another transport's file is ignored", "[costfile]") {
  CostSettings s;
  s.haveFile = true;
  s.file = parseCostFile(kGood, "/tmp/cost.txt").take();
  const LinkCost stated{1e-6, 1e-9};

  std::string note;
  auto shm = resolveCost(s, "shm", stated, &note);
  CHECK(shm.cost.alpha == 4.5e-07);
  CHECK(shm.cost.beta == 1.25e-10);
  CHECK_THAT(shm.source, Contains("file /tmp/cost.txt"));
  CHECK(note.empty());

  auto sock = resolveCost(s, "socket", stated, &note);
  CHECK(sock.cost.alpha == stated.alpha);
  CHECK(sock.cost.beta == stated.beta);
  CHECK_THAT(sock.source, Contains("transport default (socket)"));
  // What perf --model's header prints: the ignored file is named there too.
  CHECK_THAT(sock.source, Contains("cost file /tmp/cost.txt is for transport 'shm': ignored"));
  CHECK_THAT(note, Contains("ignored") && Contains("'shm'") && Contains("'socket'"));

  // The environment overrides either parameter after the file.
  s.haveBeta = true;
  s.beta = 2e-10;
  auto env = resolveCost(s, "shm", stated, nullptr);
  CHECK(env.cost.alpha == 4.5e-07);
  CHECK(env.cost.beta == 2e-10);
  CHECK_THAT(env.source, Contains("COLL_COST_BETA"));
}

TEST_CASE("COLL_COST_FILE, COLL_COST_ALPHA and COLL_COST_BETA are read strictly", "[costfile]") {
  char path[] = "/tmp/coll_cost_test_XXXXXX";
  int fd = mkstemp(path);
  REQUIRE(fd >= 0);
  FILE* f = fdopen(fd, "w");
  std::fputs("format 1\ntransport socket\nalpha 1e-5\nbeta bad\n", f);
  std::fclose(f);
  setenv("COLL_COST_FILE", path, 1);
  auto bad = coll::tune::costSettingsFromEnv();
  REQUIRE_FALSE(bad.isOk());
  CHECK_THAT(bad.status().message(), Contains(path) && Contains("line 4"));

  f = std::fopen(path, "w");
  std::fputs("format 1\ntransport socket\nalpha 1e-5\nbeta 1e-9\n", f);
  std::fclose(f);
  auto good = coll::tune::costSettingsFromEnv();
  REQUIRE(good.isOk());
  CHECK(good.value().haveFile);
  CHECK(good.value().file.transport == "socket");
  CHECK_FALSE(good.value().digest().empty());
  unsetenv("COLL_COST_FILE");
  std::remove(path);

  setenv("COLL_COST_ALPHA", "1us", 1);
  CHECK_FALSE(coll::tune::costSettingsFromEnv().isOk());
  setenv("COLL_COST_ALPHA", "1e-6", 1);
  setenv("COLL_COST_BETA", "-3", 1);
  CHECK_FALSE(coll::tune::costSettingsFromEnv().isOk());
  setenv("COLL_COST_BETA", "1e-10", 1);
  auto env = coll::tune::costSettingsFromEnv();
  unsetenv("COLL_COST_ALPHA");
  unsetenv("COLL_COST_BETA");
  REQUIRE(env.isOk());
  CHECK(env.value().alpha == 1e-6);
  CHECK(env.value().beta == 1e-10);
  CHECK(coll::tune::costSettingsFromEnv().value().digest().empty());
}

TEST_CASE("COLL_COST_HANDOFF is read strictly and is part of the digest ranks compare", "[costfile]") {
  for (const char* bad : {"1us", "-1e-6", "2", "nan"}) {
    INFO("COLL_COST_HANDOFF='" << bad << "'");
    setenv("COLL_COST_HANDOFF", bad, 1);
    auto s = coll::tune::costSettingsFromEnv();
    REQUIRE_FALSE(s.isOk());
    CHECK_THAT(s.status().message(), Contains("COLL_COST_HANDOFF"));
  }
  setenv("COLL_COST_HANDOFF", "0", 1);  // 0 turns it off: a setting, not an absence
  auto off = coll::tune::costSettingsFromEnv();
  setenv("COLL_COST_HANDOFF", "2.5e-6", 1);
  auto on = coll::tune::costSettingsFromEnv();
  unsetenv("COLL_COST_HANDOFF");
  REQUIRE(off.isOk());
  REQUIRE(on.isOk());
  CHECK(off.value().haveHandoff);
  CHECK(off.value().handoff == 0);
  CHECK(on.value().handoff == 2.5e-6);
  const std::string none = coll::tune::costSettingsFromEnv().value().digest();
  CHECK(off.value().digest() != none);
  CHECK(on.value().digest() != none);
  CHECK(on.value().digest() != off.value().digest());
}
