// tuner/port_cost.h: the slowest network port of a job, and the beta it
// sets where it is slower than the transport assumes.
#include <catch2/catch.hpp>

#include "tuner/port_cost.h"

using namespace coll::tune;

TEST_CASE("slowest port: the lowest known rate, the lowest rank among equals", "[port_cost]") {
  PortRate p = slowestPort({25000, 10000, -1, 10000, 0});
  CHECK(p.rank == 1);
  CHECK(p.mbps == 10000);
  p = slowestPort({-1, 0, 1000});
  CHECK(p.rank == 2);
  CHECK(p.mbps == 1000);
  CHECK(slowestPort({-1, -1}).rank == -1);
  CHECK(slowestPort({}).rank == -1);
}

TEST_CASE("port beta: 94% of the line rate carries TCP payload", "[port_cost]") {
  CHECK(1.0 / portBeta(1000) == Approx(125e6 * 1448.0 / 1538.0));
  CHECK(1.0 / portBeta(100000) == Approx(12.5e9 * 1448.0 / 1538.0));
  CHECK(portBeta(1000) == Approx(10 * portBeta(10000)));
}

TEST_CASE("a port slower than the transport's assumption sets beta; a faster one does not", "[port_cost]") {
  const double assumed = 1.0 / 1.2e9;  // the socket transport's 10 GbE
  std::string note;
  // 1 GbE on rank 3: about 10x the assumed time per byte.
  const double slow = betaWithPort(assumed, PortRate{3, 1000}, &note);
  CHECK(slow == portBeta(1000));
  CHECK(slow > 9 * assumed);
  CHECK(note == "beta from the slowest network port (rank 3's, 1000 Mb/s: 0.118 GB/s of TCP payload)");
  // 100 GbE: TCP does not reach it; the assumption stays.
  note.clear();
  CHECK(betaWithPort(assumed, PortRate{0, 100000}, &note) == assumed);
  CHECK(note.empty());
  // No rate known.
  CHECK(betaWithPort(assumed, PortRate{}, &note) == assumed);
  CHECK(note.empty());
}
