// ib_wire_test.cc — the connection record ranks publish through the
// bootstrap (transports/ib/ib_wire.h): a built record parses back to what
// was put in, and each kind of bad record is refused with a message that
// says what is wrong (the fuzzer, tests/fuzz/fuzz_ib_wire.cc, throws
// arbitrary bytes at the same parser).
#include <catch2/catch.hpp>

#include <cstring>
#include <vector>

#include "ib/ib_wire.h"

using namespace coll::ib;
using Catch::Matchers::Contains;

namespace {

const IbGeometry kGeo{2, 2, 4, 256 << 10};

WireHeader header(int rank, uint32_t npeers) {
  WireHeader h{};
  h.rank = rank;
  h.nchannels = 2;
  h.qpsPerConn = 2;
  h.nslots = 4;
  h.slotBytes = 256 << 10;
  h.nnics = 2;
  h.npeers = npeers;
  h.ringAddr = 0x7f0000000000;
  h.ctsAddr = 0x7f1000000000;
  h.ctrlAddr = 0x7f2000000000;
  for (int n = 0; n < 2; ++n) {
    h.nic[n].linkLayer = kLinkEthernet;
    h.nic[n].mtu = 5;
    h.nic[n].gid[15] = static_cast<uint8_t>(n + 1);
    h.nic[n].ringRkey = 0x100 + n;
    h.nic[n].ctsRkey = 0x200 + n;
    h.nic[n].ctrlRkey = 0x300 + n;
  }
  return h;
}

// Rank 1 of 3 publishes: rank 0 at index 1, rank 2 at index 0.
std::vector<char> record(WireHeader h) {
  std::vector<uint32_t> indexOf = {1, kNotAPeer, 0};
  std::vector<std::vector<uint32_t>> qpns(3);
  for (int q = 0; q < kGeo.qpsPerPeer(); ++q) {
    qpns[0].push_back(0x1000 + q);
    qpns[2].push_back(0x2000 + q);
  }
  return buildIbRecord(h, 3, kGeo, indexOf, qpns);
}

}  // namespace

TEST_CASE("an IB record parses back to what was built, per reader", "[ib][wire]") {
  const auto rec = record(header(1, 2));
  CHECK(rec.size() == ibRecordBytes(3, kGeo));
  auto for0 = parseIbRecord(rec.data(), rec.size(), 1, 0, 3, kGeo);
  REQUIRE(for0.isOk());
  CHECK(for0.value().myIndex == 1);
  CHECK(for0.value().qpns == std::vector<uint32_t>{0x1000, 0x1001, 0x1002, 0x1003, 0x1004});
  CHECK(for0.value().nicOfChannel(1).ringRkey == 0x101);
  CHECK(for0.value().nicOfChannel(2).ringRkey == 0x100);
  // Index 1 of 2 peers, channel 1: rings of 4 x 256 KiB before it = (1*2+1)*4.
  CHECK(for0.value().ringOf(1, kGeo) == 0x7f0000000000 + 3ull * 4 * (256 << 10));
  CHECK(for0.value().ctsOf(1, kGeo) == 0x7f1000000000 + 3ull * 4 * sizeof(CtsEntry));
  CHECK(for0.value().ctrlBlock() == 0x7f2000000000 + kCtrlBlockBytes);
  auto for2 = parseIbRecord(rec.data(), rec.size(), 1, 2, 3, kGeo);
  REQUIRE(for2.isOk());
  CHECK(for2.value().myIndex == 0);
  CHECK(for2.value().qpns.front() == 0x2000);
}

TEST_CASE("an IB record that is wrong is refused, saying what", "[ib][wire]") {
  auto refuse = [](std::vector<char> rec, int from, int me, const char* what, IbGeometry g = kGeo) {
    auto p = parseIbRecord(rec.data(), rec.size(), from, me, 3, g);
    REQUIRE_FALSE(p.isOk());
    CHECK_THAT(p.status().message(), Contains(what));
  };
  const auto good = record(header(1, 2));
  SECTION("size") {
    auto r = good;
    r.pop_back();
    refuse(r, 1, 0, "bytes of connection data");
  }
  SECTION("version") {
    auto r = good;
    r[0] ^= 1;
    refuse(r, 1, 0, "another IB wire version");
  }
  SECTION("rank") { refuse(record(header(2, 2)), 1, 0, "says it is rank 2"); }
  SECTION("geometry") {
    IbGeometry g = kGeo;
    g.nslots = 8;
    refuse(good, 1, 0, "every rank must use the same", g);
  }
  SECTION("no connection prepared") {
    auto h = header(0, 2);
    std::vector<std::vector<uint32_t>> qpns(3);
    qpns[2].assign(kGeo.qpsPerPeer(), 7);
    auto r = buildIbRecord(h, 3, kGeo, {kNotAPeer, kNotAPeer, 0}, qpns);
    refuse(r, 0, 1, "did not prepare a connection to rank 1");
  }
  SECTION("index past its peers") {
    auto h = header(1, 1);
    refuse(record(h), 1, 0, "at index 1 of its 1 peers");
  }
  SECTION("QP number") {
    auto h = header(0, 2);
    std::vector<std::vector<uint32_t>> qpns(3);
    qpns[1].assign(kGeo.qpsPerPeer(), 0x1000000);
    refuse(buildIbRecord(h, 3, kGeo, {kNotAPeer, 0, kNotAPeer}, qpns), 0, 1, "QP number");
  }
  SECTION("regions") {
    auto h = header(1, 2);
    h.ringAddr = 0;
    refuse(record(h), 1, 0, "not a valid address range");
    h = header(1, 2);
    h.ctsAddr = 0x7f1000000001;
    refuse(record(h), 1, 0, "not a valid address range");
    h = header(1, 2);
    h.ctrlAddr = ~0ull - 4096;
    refuse(record(h), 1, 0, "not a valid address range");
  }
  SECTION("NICs") {
    auto h = header(1, 2);
    h.nnics = 0;
    refuse(record(h), 1, 0, "claims 0 NICs");
    h = header(1, 2);
    h.nic[1].linkLayer = 9;
    refuse(record(h), 1, 0, "link layer 9");
    h = header(1, 2);
    h.nic[0].mtu = 6;
    refuse(record(h), 1, 0, "MTU code 6");
    h = header(1, 2);
    h.nic[0].linkLayer = kLinkInfiniBand;
    refuse(record(h), 1, 0, "without a LID");
  }
}
