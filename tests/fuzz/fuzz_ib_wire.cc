// fuzz_ib_wire — ib::parseIbRecord: the connection record a peer publishes
// through the bootstrap (transports/ib/ib_wire.h), which says where the
// peer's rings are and which QPs to connect to.
//
// Input: nranks (2..9), the reader's and the writer's ranks, the geometry
// (channels 1..4, QPs per connection 1..4, slots 1..8, slot size), then the
// record's bytes (padded or cut to the expected size when flags say so).
// Properties, for an accepted record:
//   - the reader's index is below the writer's peer count, every QP number
//     is 1..2^24-1 and there is one per control and data QP;
//   - 1..kMaxRails NICs, each of a known link layer and MTU; every channel's
//     NIC is one of them;
//   - every ring, clear-to-send ring and control block the reader will
//     write to lies inside the region the header advertises, without
//     overflow (nothing is written outside an advertised buffer);
//   - building a record from what was parsed and parsing it again gives the
//     same fields.
// A refusal is never collInternalError for valid arguments.
#include <cstring>
#include <vector>

#include "fuzz_common.h"
#include "ib/ib_wire.h"

using namespace coll::ib;

namespace {

struct Args {
  int nranks, from, me;
  IbGeometry g;
};

Args takeArgs(const uint8_t** data, size_t* size) {
  Args a;
  a.nranks = 2 + fuzz::take<uint8_t>(data, size) % 8;
  a.from = fuzz::take<uint8_t>(data, size) % a.nranks;
  a.me = fuzz::take<uint8_t>(data, size) % a.nranks;
  if (a.me == a.from) a.me = (a.from + 1) % a.nranks;
  a.g.nchannels = 1 + fuzz::take<uint8_t>(data, size) % 4;
  a.g.qpsPerConn = 1 + fuzz::take<uint8_t>(data, size) % 4;
  a.g.nslots = 1 + fuzz::take<uint8_t>(data, size) % 8;
  a.g.slotBytes = 128 + 64 * static_cast<size_t>(fuzz::take<uint16_t>(data, size) % 4096);
  return a;
}

fuzz::Bytes encodeArgs(const Args& a) {
  fuzz::Bytes b;
  for (int v : {a.nranks - 2, a.from, a.me, a.g.nchannels - 1, a.g.qpsPerConn - 1, a.g.nslots - 1})
    fuzz::append(b, static_cast<uint8_t>(v));
  fuzz::append(b, static_cast<uint16_t>((a.g.slotBytes - 128) / 64));
  return b;
}

std::vector<char> validRecord(const Args& a, uint8_t link) {
  WireHeader h{};
  h.rank = a.from;
  h.nchannels = static_cast<uint32_t>(a.g.nchannels);
  h.qpsPerConn = static_cast<uint32_t>(a.g.qpsPerConn);
  h.nslots = static_cast<uint32_t>(a.g.nslots);
  h.slotBytes = a.g.slotBytes;
  h.nnics = 1;
  h.npeers = static_cast<uint32_t>(a.nranks - 1);
  h.ringAddr = 0x7f0000000000;
  h.ctsAddr = 0x7f4000000000;
  h.ctrlAddr = 0x7f8000000000;
  h.nic[0].linkLayer = link;
  h.nic[0].lid = 7;
  h.nic[0].mtu = 5;
  std::vector<uint32_t> indexOf(a.nranks, kNotAPeer);
  std::vector<std::vector<uint32_t>> qpns(a.nranks);
  uint32_t idx = 0;
  for (int r = 0; r < a.nranks; ++r) {
    if (r == a.from) continue;
    indexOf[r] = idx++;
    for (int q = 0; q < a.g.qpsPerPeer(); ++q) qpns[r].push_back(0x100 + 16 * r + q);
  }
  return buildIbRecord(h, a.nranks, a.g, indexOf, qpns);
}

bool inside(uint64_t at, uint64_t bytes, uint64_t base, uint64_t regionBytes) {
  return at >= base && bytes <= regionBytes && at - base <= regionBytes - bytes;
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  std::vector<fuzz::Bytes> seeds;
  for (Args a : {Args{2, 0, 1, IbGeometry{2, 1, 4, 256 << 10}}, Args{5, 3, 1, IbGeometry{4, 2, 8, 1 << 20}},
                 Args{9, 8, 0, IbGeometry{1, 4, 2, 4096}}})
    for (uint8_t link : {kLinkEthernet, kLinkInfiniBand}) {
      fuzz::Bytes b = encodeArgs(a);
      fuzz::append(b, static_cast<uint8_t>(1));
      auto rec = validRecord(a, link);
      b.insert(b.end(), rec.begin(), rec.end());
      seeds.push_back(b);
    }
  fuzz::maybeWriteSeeds(seeds);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const Args a = takeArgs(&data, &size);
  const uint8_t flags = fuzz::take<uint8_t>(&data, &size);
  std::vector<char> rec(reinterpret_cast<const char*>(data), reinterpret_cast<const char*>(data) + size);
  if (flags & 1) rec.resize(ibRecordBytes(a.nranks, a.g), 0);
  auto p = parseIbRecord(rec.data(), rec.size(), a.from, a.me, a.nranks, a.g);
  if (!p.isOk()) {
    FUZZ_CHECK(p.status().code() != collInternalError);
    return 0;
  }
  const PeerRecord& r = p.value();
  const WireHeader& h = r.header;
  FUZZ_CHECK(r.myIndex < h.npeers && h.npeers < static_cast<uint32_t>(a.nranks));
  FUZZ_CHECK(r.qpns.size() == static_cast<size_t>(a.g.qpsPerPeer()));
  for (uint32_t q : r.qpns) FUZZ_CHECK(q >= 1 && q <= 0xffffff);
  FUZZ_CHECK(h.nnics >= 1 && h.nnics <= static_cast<uint32_t>(kMaxRails));
  const uint64_t conns = static_cast<uint64_t>(h.npeers) * a.g.nchannels;
  const uint64_t ringRegion = conns * a.g.nslots * a.g.slotBytes;
  const uint64_t ctsRegion = conns * a.g.nslots * sizeof(CtsEntry);
  for (int c = 0; c < a.g.nchannels; ++c) {
    const WireNic& nic = r.nicOfChannel(c);
    FUZZ_CHECK(&nic >= h.nic && &nic < h.nic + h.nnics);
    FUZZ_CHECK(nic.linkLayer == kLinkEthernet || nic.linkLayer == kLinkInfiniBand);
    FUZZ_CHECK(nic.mtu >= 1 && nic.mtu <= 5);
    FUZZ_CHECK(inside(r.ringOf(c, a.g), static_cast<uint64_t>(a.g.nslots) * a.g.slotBytes, h.ringAddr, ringRegion));
    FUZZ_CHECK(inside(r.ctsOf(c, a.g), a.g.nslots * sizeof(CtsEntry), h.ctsAddr, ctsRegion));
  }
  FUZZ_CHECK(inside(r.ctrlBlock(), kCtrlBlockBytes, h.ctrlAddr, static_cast<uint64_t>(h.npeers) * kCtrlBlockBytes));
  // Round trip: what was parsed, published again, parses the same.
  std::vector<uint32_t> indexOf(a.nranks, kNotAPeer);
  std::vector<std::vector<uint32_t>> qpns(a.nranks);
  indexOf[a.me] = r.myIndex;
  qpns[a.me] = r.qpns;
  auto again = parseIbRecord(buildIbRecord(h, a.nranks, a.g, indexOf, qpns).data(), rec.size(), a.from, a.me,
                             a.nranks, a.g);
  FUZZ_CHECK(again.isOk());
  FUZZ_CHECK(again.value().myIndex == r.myIndex && again.value().qpns == r.qpns);
  FUZZ_CHECK(std::memcmp(&again.value().header, &h, sizeof(h)) == 0);
  return 0;
}
