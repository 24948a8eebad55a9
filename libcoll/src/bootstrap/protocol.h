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

#include <cstdint>

#include "bootstrap/unique_id.h"

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

struct Frame {
  uint32_t len;
};

struct Reply {
  uint32_t status;  // collResult_t
  uint32_t len;
};

}  // namespace coll::boot
