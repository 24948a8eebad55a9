// protocol.cc — the root's pure judgments of what ranks send (protocol.h).
// No I/O and no state here, so tests/fuzz can feed them any bytes.
#include "bootstrap/protocol.h"

#include <cstring>

namespace coll::boot {

Result<HelloInfo> judgeHello(const void* bytes, size_t n, const Secret& secret, int expectedNranks) {
  if (n != sizeof(Hello)) return makeError(collRemoteError, "hello of {} bytes (want {})", n, sizeof(Hello));
  Hello h;
  memcpy(&h, bytes, sizeof(h));
  Secret theirs;
  memcpy(theirs.data(), h.secret, kSecretBytes);
  if (!secretsEqual(theirs, secret) || h.magic != kHelloMagic)
    return makeError(collRemoteError, "wrong secret or magic");
  if (h.version != kProtocolVersion)
    return makeError(collInvalidUsage, "rank {} speaks bootstrap protocol {}, the root {}: mixed libcoll versions", h.rank,
                     h.version, kProtocolVersion);
  if (h.nranks <= 0 || h.rank < 0 || h.rank >= h.nranks)
    return makeError(collInvalidUsage, "a rank says it is rank {} of {}: not a rank of such a job", h.rank, h.nranks);
  if (expectedNranks > 0 && h.nranks != expectedNranks)
    return makeError(collInvalidUsage,
                     "rank {} was started for a job of {} ranks, but the ranks before it for a job of {}: every "
                     "rank must be given the same job size",
                     h.rank, h.nranks, expectedNranks);
  return HelloInfo{h.rank, h.nranks};
}

Result<FrameInfo> judgeFrame(uint32_t len, int rank) {
  if (len == kDoneLen) return FrameInfo{true, 0};
  if (len > kMaxFrame) return makeError(collRemoteError, "bootstrap: rank {} sent an oversized frame", rank);
  return FrameInfo{false, len};
}

}  // namespace coll::boot
