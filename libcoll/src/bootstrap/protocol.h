// protocol.h — the bootstrap wire format between ranks and the root.
//
//   rank -> root : Hello (fixed size, secret first)
//   then rounds  : rank -> root  Frame{len} + len bytes
//                  root -> rank  Reply{status, len} + len bytes
//                  (status 0: the concatenation of every rank's bytes in
//                   rank order; else an error message for every rank)
//   rank -> root : Frame{kDoneLen} ends the rank's session.
// Sizes are bounded (kMaxFrame) so garbage can never make the root allocate
// without limit.
#pragma once

#include <cstddef>
#include <cstdint>

#include "bootstrap/unique_id.h"
#include "coll/base/status.h"

namespace coll::boot {

constexpr uint32_t kHelloMagic = 0x4f4c4c48;  // "HLLO"
constexpr uint32_t kProtocolVersion = 1;
constexpr uint32_t kMaxFrame = 1u << 20;
constexpr uint32_t kDoneLen = 0xffffffffu;

struct Hello {
  uint8_t secret[kSecretBytes];  // first: nothing else is trusted before it
  uint32_t magic;
  uint32_t version;
  int32_t rank;
  int32_t nranks;
};

static_assert(sizeof(Hello) == kSecretBytes + 16, "Hello must have no padding");

struct Frame {
  uint32_t len;
};

struct Reply {
  uint32_t status;  // collResult_t
  uint32_t len;
};

// What the root learns from a Hello that checked out.
struct HelloInfo {
  int rank;
  int nranks;
};

// The root's judgment of the bytes a connecting rank sent as its Hello (pure;
// fuzzed by tests/fuzz).  `expectedNranks` is the job size the root already
// knows from an earlier Hello, or 0 while it knows none.  The secret is
// compared first, in constant time.  Two kinds of rejection:
//  - collRemoteError: a stranger (not sizeof(Hello) bytes, wrong secret or
//    magic).  Say nothing to it; drop the connection.
//  - collInvalidUsage: it knows the secret, but its version, rank or nranks
//    do not fit: the job is misconfigured.  The message names both sides
//    (the root sends it to every rank).
// Whether `rank` is already taken is the caller's business (state).
Result<HelloInfo> judgeHello(const void* bytes, size_t n, const Secret& secret, int expectedNranks);
inline bool isStrangerRejection(const Status& s) { return s.code() == collRemoteError; }

// The root's judgment of a Frame's length prefix from `rank`: kDoneLen ends
// the rank's session (done = true), else a payload of `len` <= kMaxFrame
// bytes follows; anything larger is an error (collRemoteError).
struct FrameInfo {
  bool done;
  uint32_t len;  // payload bytes that follow (0 when done)
};
Result<FrameInfo> judgeFrame(uint32_t len, int rank);

}  // namespace coll::boot
