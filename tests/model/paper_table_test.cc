// paper_table_test.cc — collmodel's busbw follows the tuner's prediction:
// with no alpha the ring reaches the ports' rate exactly and the double
// tree (N-1)/N of it; alpha only lowers it; two ports double the bytes.
#include <catch2/catch.hpp>

#include <cstdlib>
#include <string>

#include "paper_table.h"

using coll::model::PaperRow;
using coll::model::PaperSpec;
using coll::sched::Algo;

namespace {

PaperSpec spec(double alpha) {
  PaperSpec s;
  s.hosts = {2, 8, 64};
  s.ports = {1, 2};
  s.rateGbps = 400;
  s.alpha = alpha;
  s.sizes = {size_t{1} << 20, size_t{1} << 30};
  s.algos = {Algo::Ring, Algo::Tree};
  s.maxChannels = 2;
  s.slotPayloadBytes = (256 << 10) - 64;
  return s;
}

std::vector<PaperRow> rowsOf(const PaperSpec& s) {
  auto r = coll::model::paperRows(s);
  REQUIRE(r.isOk());
  return r.take();
}

}  // namespace

TEST_CASE("every hosts x ports x algorithm x size cell, in order", "[model]") {
  const PaperSpec s = spec(5e-6);
  const auto rows = rowsOf(s);
  REQUIRE(rows.size() == 3 * 2 * 2 * 2);
  CHECK(rows.front().hosts == 2);
  CHECK(rows.front().ports == 1);
  CHECK(rows.front().algo == Algo::Ring);
  CHECK(rows.front().bytes == size_t{1} << 20);
  CHECK(rows[1].bytes == size_t{1} << 30);
  CHECK(rows[2].algo == Algo::Tree);
  CHECK(rows[4].ports == 2);
  CHECK(rows.back().hosts == 64);
  for (const PaperRow& r : rows) {
    INFO(r.hosts << " hosts, " << r.ports << " ports, " << coll::sched::algoName(r.algo) << ", " << r.bytes << " B");
    CHECK(r.seconds == Approx(r.alphaSeconds + r.betaSeconds));
    CHECK(r.busbwGBps == Approx(static_cast<double>(r.bytes) / r.seconds * 2.0 * (r.hosts - 1) / r.hosts / 1e9));
    CHECK(r.portShare == Approx(r.busbwGBps / (r.ports * 50.0)));
    CHECK(r.chunkBytes <= s.slotPayloadBytes);
    CHECK(r.channels >= 1);
    CHECK(r.channels <= 2);
  }
}

TEST_CASE("without alpha the ring moves at the ports' rate, the double tree at (N-1)/N of it", "[model]") {
  for (const PaperRow& r : rowsOf(spec(0))) {
    INFO(r.hosts << " hosts, " << r.ports << " ports, " << r.bytes << " B");
    if (r.algo == Algo::Ring) {
      CHECK(r.portShare == Approx(1.0));
    } else if (r.bytes == size_t{1} << 30 && r.hosts > 2) {
      // Thousands of chunks: the busiest port carries 2 S (model of cost.cc).
      CHECK(r.portShare == Approx((r.hosts - 1.0) / r.hosts).epsilon(0.002));
    }
  }
}

TEST_CASE("efficiency scales beta: without alpha the ring reaches that share of the ports", "[model]") {
  PaperSpec s = spec(0);
  s.efficiency = 0.92;
  for (const PaperRow& r : rowsOf(s))
    if (r.algo == Algo::Ring) CHECK(r.portShare == Approx(0.92));
  s.efficiency = 0;
  CHECK_FALSE(coll::model::paperRows(s).isOk());
  s.efficiency = 1.5;
  CHECK_FALSE(coll::model::paperRows(s).isOk());
}

TEST_CASE("alpha only lowers busbw; a second port doubles the bytes without alpha", "[model]") {
  const auto none = rowsOf(spec(0));
  const auto some = rowsOf(spec(5e-6));
  REQUIRE(none.size() == some.size());
  // (alpha also moves the tuner's chunks: none below alpha/beta bytes.)
  for (size_t i = 0; i < none.size(); ++i) CHECK(some[i].busbwGBps < none[i].busbwGBps);
  // Cell order: (hosts, ports, algo, size); ports 1 and 2 are 4 cells apart.
  for (size_t i = 0; i < none.size(); i += 8)
    for (size_t j = 0; j < 4; ++j) CHECK(none[i + 4 + j].busbwGBps == Approx(2 * none[i + j].busbwGBps));
}

TEST_CASE("the caller's COLL_ALGO is left as it was", "[model]") {
  setenv("COLL_ALGO", "allreduce:doubling", 1);
  const auto rows = rowsOf(spec(5e-6));
  const char* after = std::getenv("COLL_ALGO");
  REQUIRE(after != nullptr);
  CHECK(std::string(after) == "allreduce:doubling");
  unsetenv("COLL_ALGO");
  CHECK(rows.front().algo == Algo::Ring);
  rowsOf(spec(5e-6));
  CHECK(std::getenv("COLL_ALGO") == nullptr);
}

TEST_CASE("bad specs are errors", "[model]") {
  PaperSpec s = spec(5e-6);
  s.hosts = {1};
  CHECK_FALSE(coll::model::paperRows(s).isOk());
  s = spec(5e-6);
  s.algos = {Algo::Pipeline};  // a broadcast and reduce algorithm
  auto r = coll::model::paperRows(s);
  REQUIRE_FALSE(r.isOk());
  CHECK(r.status().message().find("pipeline") != std::string::npos);
  s = spec(5e-6);
  s.sizes = {};
  CHECK_FALSE(coll::model::paperRows(s).isOk());
}

TEST_CASE("the markdown table has a line per hosts x ports x algorithm", "[model]") {
  PaperSpec s = spec(0);
  s.hosts = {8};
  const std::string md = coll::model::paperMarkdown(s, rowsOf(s));
  CHECK(md.find("| hosts | ports | algorithm | 1 MiB | 1 GiB |\n|---|---|---|---|---|\n") == 0);
  CHECK(md.find("| 8 | 1 x 400 Gb/s | ring | 50.0 GB/s (100%) | 50.0 GB/s (100%) |\n") != std::string::npos);
  CHECK(md.find("| 8 | 2 x 400 Gb/s | ring | 100.0 GB/s (100%) | 100.0 GB/s (100%) |\n") != std::string::npos);
  size_t lines = 0;
  for (char c : md) lines += c == '\n';
  CHECK(lines == 2 + 2 * 2);
}
