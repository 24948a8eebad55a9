#include "ib/ib_wire.h"

#include <cstring>

namespace coll::ib {

static_assert(sizeof(WireHeader) == 64 + kMaxRails * sizeof(WireNic), "the record has no padding");

namespace {

size_t perRankBytes(const IbGeometry& g) { return sizeof(uint32_t) * (1 + static_cast<size_t>(g.qpsPerPeer())); }

// base + count * each stays below 2^63 (user-space addresses do).
bool regionFits(uint64_t base, uint64_t count, uint64_t each) {
  if (base == 0 || base % 64 != 0) return false;
  if (each != 0 && count > (uint64_t{1} << 62) / each) return false;
  return base + count * each > base && base + count * each < (uint64_t{1} << 63);
}

}  // namespace

size_t ibRecordBytes(int nranks, const IbGeometry& g) {
  return sizeof(WireHeader) + static_cast<size_t>(nranks) * perRankBytes(g);
}

uint64_t PeerRecord::ringOf(int channel, const IbGeometry& g) const {
  return header.ringAddr + (static_cast<uint64_t>(myIndex) * g.nchannels + channel) * g.nslots * g.slotBytes;
}

uint64_t PeerRecord::ctsOf(int channel, const IbGeometry& g) const {
  return header.ctsAddr + (static_cast<uint64_t>(myIndex) * g.nchannels + channel) * g.nslots * sizeof(CtsEntry);
}

uint64_t PeerRecord::ctrlBlock() const { return header.ctrlAddr + static_cast<uint64_t>(myIndex) * kCtrlBlockBytes; }

std::vector<char> buildIbRecord(WireHeader header, int nranks, const IbGeometry& g,
                                const std::vector<uint32_t>& indexOf,
                                const std::vector<std::vector<uint32_t>>& qpnsFor) {
  header.magic = kIbWireMagic;
  header.version = kIbWireVersion;
  std::vector<char> out(ibRecordBytes(nranks, g), 0);
  memcpy(out.data(), &header, sizeof(header));
  char* at = out.data() + sizeof(header);
  const size_t nq = static_cast<size_t>(g.qpsPerPeer());
  for (int r = 0; r < nranks; ++r) {
    std::vector<uint32_t> words(1 + nq, 0);
    words[0] = kNotAPeer;
    if (r < static_cast<int>(qpnsFor.size()) && qpnsFor[r].size() == nq) {
      words[0] = indexOf[r];
      memcpy(words.data() + 1, qpnsFor[r].data(), nq * sizeof(uint32_t));
    }
    memcpy(at, words.data(), words.size() * sizeof(uint32_t));
    at += words.size() * sizeof(uint32_t);
  }
  return out;
}

Result<PeerRecord> parseIbRecord(const char* record, size_t bytes, int from, int me, int nranks,
                                 const IbGeometry& g) {
  if (nranks < 2 || from < 0 || from >= nranks || me < 0 || me >= nranks || from == me)
    return makeError(collInternalError, "ib: bad arguments to parseIbRecord ({} of {} ranks)", from, nranks);
  if (bytes != ibRecordBytes(nranks, g))
    return makeError(collRemoteError, "ib: rank {} published {} bytes of connection data, expected {}", from, bytes,
                     ibRecordBytes(nranks, g));
  PeerRecord p;
  memcpy(&p.header, record, sizeof(WireHeader));
  const WireHeader& h = p.header;
  if (h.magic != kIbWireMagic || h.version != kIbWireVersion)
    return makeError(collRemoteError, "ib: rank {} speaks another IB wire version ({:#x}/{}, expected {:#x}/{})", from,
                     h.magic, h.version, kIbWireMagic, kIbWireVersion);
  if (h.rank != from) return makeError(collRemoteError, "ib: the record of rank {} says it is rank {}", from, h.rank);
  if (static_cast<int>(h.nchannels) != g.nchannels || static_cast<int>(h.qpsPerConn) != g.qpsPerConn ||
      static_cast<int>(h.nslots) != g.nslots || h.slotBytes != g.slotBytes)
    return makeError(collInvalidUsage,
                     "ib: rank {} connects with {} channels x {} QPs, {} slots of {} bytes; this rank with {} x {}, {} "
                     "of {} (every rank must use the same COLL_IB_QPS_PER_CONNECTION and FIFO settings)",
                     from, h.nchannels, h.qpsPerConn, h.nslots, h.slotBytes, g.nchannels, g.qpsPerConn, g.nslots,
                     g.slotBytes);
  if (h.nnics < 1 || h.nnics > kMaxRails)
    return makeError(collRemoteError, "ib: rank {} claims {} NICs (1..{})", from, h.nnics, kMaxRails);
  if (h.npeers < 1 || h.npeers >= static_cast<uint32_t>(nranks))
    return makeError(collRemoteError, "ib: rank {} claims {} peers in a job of {} ranks", from, h.npeers, nranks);
  const uint64_t conns = static_cast<uint64_t>(h.npeers) * g.nchannels;
  if (!regionFits(h.ringAddr, conns * g.nslots, g.slotBytes) ||
      !regionFits(h.ctsAddr, conns * g.nslots, sizeof(CtsEntry)) || !regionFits(h.ctrlAddr, h.npeers, kCtrlBlockBytes))
    return makeError(collRemoteError, "ib: rank {} published a region that is not a valid address range", from);
  for (uint32_t n = 0; n < h.nnics; ++n) {
    const WireNic& nic = h.nic[n];
    if (nic.linkLayer != kLinkInfiniBand && nic.linkLayer != kLinkEthernet)
      return makeError(collRemoteError, "ib: rank {} NIC {} has link layer {}", from, n, nic.linkLayer);
    if (nic.mtu < 1 || nic.mtu > 5) return makeError(collRemoteError, "ib: rank {} NIC {} has MTU code {}", from, n, nic.mtu);
    if (nic.linkLayer == kLinkInfiniBand && nic.lid == 0)
      return makeError(collRemoteError, "ib: rank {} NIC {} is InfiniBand without a LID", from, n);
  }
  const char* at = record + sizeof(WireHeader) + static_cast<size_t>(me) * perRankBytes(g);
  uint32_t index;
  memcpy(&index, at, sizeof(index));
  if (index == kNotAPeer) return makeError(collRemoteError, "ib: rank {} did not prepare a connection to rank {}", from, me);
  if (index >= h.npeers)
    return makeError(collRemoteError, "ib: rank {} put rank {} at index {} of its {} peers", from, me, index, h.npeers);
  p.myIndex = index;
  p.qpns.resize(static_cast<size_t>(g.qpsPerPeer()));
  memcpy(p.qpns.data(), at + sizeof(uint32_t), p.qpns.size() * sizeof(uint32_t));
  for (uint32_t q : p.qpns)
    if (q == 0 || q > 0xffffff) return makeError(collRemoteError, "ib: rank {} published QP number {:#x}", from, q);
  return p;
}

}  // namespace coll::ib
