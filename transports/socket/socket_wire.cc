#include "socket_wire.h"

#include <cstring>

namespace coll::sock {

Result<ConnKey> parseHello(const void* bytes, size_t n, const HelloExpect& expect) {
  if (n != sizeof(ConnHello)) return makeError(collRemoteError, "hello of {} bytes (want {})", n, sizeof(ConnHello));
  ConnHello h;
  memcpy(&h, bytes, sizeof(h));
  uint8_t diff = 0;
  for (size_t i = 0; i < kSecretBytes; ++i) diff |= static_cast<uint8_t>(h.secret[i] ^ expect.secret[i]);
  if (diff != 0) return makeError(collRemoteError, "wrong job secret");
  if (h.magic != kConnMagic || h.version != kConnVersion)
    return makeError(collRemoteError, "bad magic {:#x} or protocol version {}", h.magic, h.version);
  if (h.fromRank < 0 || h.fromRank >= expect.nranks || h.fromRank == expect.myRank)
    return makeError(collRemoteError, "hello from impossible rank {} (nranks {})", h.fromRank, expect.nranks);
  if (h.toRank != expect.myRank)
    return makeError(collRemoteError, "hello from rank {} meant for rank {}, not {}", h.fromRank, h.toRank,
                     expect.myRank);
  if (h.channel < -1 || h.channel >= expect.nchannels || h.stream < 0 || h.stream >= expect.nstreams ||
      (h.channel == -1 && h.stream != 0))
    return makeError(collRemoteError, "hello from rank {}: channel {} stream {} out of range ({} x {})", h.fromRank,
                     h.channel, h.stream, expect.nchannels, expect.nstreams);
  if (h.slotBytes != expect.slotBytes || h.nslots != expect.nslots)
    return makeError(collInvalidUsage, "rank {} uses {} slots of {} bytes, rank {} uses {} of {} (COLL_SHM_SLOT_SIZE / "
                     "COLL_SHM_NSLOTS differ between ranks)",
                     h.fromRank, h.nslots, h.slotBytes, expect.myRank, expect.nslots, expect.slotBytes);
  return ConnKey{h.fromRank, h.channel, h.stream};
}

Status checkFrameHeader(const FrameHeader& h, uint32_t slotBytes) {
  if (h.kind == kData) {
    if (h.bytes == 0 || h.bytes > slotBytes)
      return makeError(collRemoteError, "data frame of {} bytes (slot size {})", h.bytes, slotBytes);
    return Status::ok();
  }
  if (h.kind == kFailure) {
    if (h.bytes > kMaxNoticeBytes) return makeError(collRemoteError, "failure notice of {} bytes", h.bytes);
    return Status::ok();
  }
  if (h.kind == kWait) {
    if (h.bytes != sizeof(int32_t)) return makeError(collRemoteError, "wait report of {} bytes", h.bytes);
    return Status::ok();
  }
  return makeError(collRemoteError, "unknown frame kind {}", h.kind);
}

}  // namespace coll::sock
