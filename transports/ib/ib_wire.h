// ib_wire.h — what each rank publishes through the bootstrap so that its
// peers can connect their queue pairs to it: one record per rank, the same
// size on every rank (the exchange is an all-gather).
//
//   header: geometry (channels, QPs per connection, slots), the addresses
//           of the three regions peers write into (receive rings,
//           clear-to-send rings, control blocks), and per NIC its GID, LID
//           and the regions' rkeys (an MR belongs to one NIC's PD);
//   then per rank r of the job: the index under which r's rings and blocks
//           sit in those regions (kNotAPeer when r is not a peer), and the
//           QP numbers for r: the control QP, then channel-major data QPs.
//
// Pure data and checks, no verbs calls: the fuzzer (fuzz/fuzz_ib_wire.cc)
// feeds parseIbRecord whatever a broken or hostile peer could send.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "coll/base/status.h"

namespace coll::ib {

constexpr uint32_t kIbWireMagic = 0x31574943;  // "CIW1"
constexpr uint32_t kIbWireVersion = 1;
constexpr int kMaxRails = 4;         // NICs one rank drives
constexpr int kMaxQpsPerConn = 16;   // QPs one (peer, channel) connection stripes slots over
constexpr uint32_t kNotAPeer = 0xffffffffu;
// WireNic::linkLayer: verbs.h's IBV_LINK_LAYER_* values (ib_qp.cc checks),
// spelled here so that this file needs no verbs.h (the fuzzer runs without).
constexpr uint8_t kLinkInfiniBand = 1;
constexpr uint8_t kLinkEthernet = 2;
// A clear-to-send entry, written by the receiver into the sender's ring.
struct CtsEntry {
  uint64_t addr;
  uint32_t rkey;
  uint32_t size;
  uint64_t seq;  // the slot sequence it clears, plus one (0: never written)
  uint64_t pad;
};
static_assert(sizeof(CtsEntry) == 32);
// Per peer in the control region: a failure notice's text lands here.
constexpr size_t kNoticeBytes = 1024;
constexpr size_t kCtrlBlockBytes = kNoticeBytes + 64;  // + the liveness probe's word

struct WireNic {
  uint8_t gid[16];
  uint16_t lid;
  uint8_t linkLayer;  // kLinkInfiniBand, kLinkEthernet
  uint8_t mtu;        // ibv_mtu (1..5), the active MTU
  uint32_t ringRkey;
  uint32_t ctsRkey;
  uint32_t ctrlRkey;
  uint32_t gidIndex;
};
static_assert(sizeof(WireNic) == 36);

struct WireHeader {
  uint32_t magic;
  uint32_t version;
  int32_t rank;
  uint32_t nchannels;
  uint32_t qpsPerConn;
  uint32_t nslots;
  uint64_t slotBytes;
  uint32_t nnics;
  uint32_t npeers;
  uint64_t ringAddr;  // npeers x nchannels rings of nslots x slotBytes
  uint64_t ctsAddr;   // npeers x nchannels rings of nslots CtsEntry
  uint64_t ctrlAddr;  // npeers blocks of kCtrlBlockBytes
  WireNic nic[kMaxRails];
};

struct IbGeometry {
  int nchannels = 0;
  int qpsPerConn = 1;
  int nslots = 0;
  size_t slotBytes = 0;
  int qpsPerPeer() const { return 1 + nchannels * qpsPerConn; }
};

// Bytes of one rank's record in a job of nranks.
size_t ibRecordBytes(int nranks, const IbGeometry& g);

// What one peer told us, checked: everything we need to connect to it.
struct PeerRecord {
  WireHeader header;
  uint32_t myIndex = kNotAPeer;  // where our rings/blocks sit in its regions
  std::vector<uint32_t> qpns;    // its QPs for us: control, then [channel][q]
  // The NIC carrying a QP of channel c (control: channel 0's).
  const WireNic& nicOfChannel(int c) const { return header.nic[c % header.nnics]; }
  uint64_t ringOf(int channel, const IbGeometry& g) const;  // its receive ring for our sends
  uint64_t ctsOf(int channel, const IbGeometry& g) const;   // its clear-to-send ring for its sends to us
  uint64_t ctrlBlock() const;                               // its control block for us
};

// Builds the record: header as given (magic, version filled here), then
// per rank its index and QP numbers (empty vector: not a peer).
std::vector<char> buildIbRecord(WireHeader header, int nranks, const IbGeometry& g,
                                const std::vector<uint32_t>& indexOf,
                                const std::vector<std::vector<uint32_t>>& qpnsFor);

// Checks `record` (bytes long) as rank `from`'s and extracts what concerns
// rank `me`.  Errors name what is wrong: another geometry, a bad QP number,
// a region that does not fit in memory's address range, ...
Result<PeerRecord> parseIbRecord(const char* record, size_t bytes, int from, int me, int nranks,
                                 const IbGeometry& g);

}  // namespace coll::ib
