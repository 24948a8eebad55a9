// socket_wire.h — what travels on a socket-transport connection, and the
// pure functions that judge incoming bytes (fuzzed: tests/fuzz).
//
//   connector -> acceptor : ConnHello (secret first; nothing else is read
//                           from a connection before the secret matched)
//   acceptor  -> connector: ConnHello (the acceptor proves it too)
//   then, both ways       : FrameHeader + payload, repeated
//
// A frame is one slot of the FIFO it belongs to (kData, bytes <= slot size),
// a failure notice (kFailure, bytes <= kMaxNoticeBytes, text) or a wait
// report at a timeout (kWait, 4 bytes: the rank the sender waits for).
#pragma once

#include <sys/socket.h>

#include <array>
#include <cstddef>
#include <cstdint>

#include "coll/base/status.h"

namespace coll::sock {

constexpr size_t kSecretBytes = 32;
using Secret = std::array<uint8_t, kSecretBytes>;

constexpr uint32_t kConnMagic = 0x4b434f53;  // "SOCK"
constexpr uint32_t kConnVersion = 1;
constexpr uint32_t kMaxNoticeBytes = 1024;

struct ConnHello {
  uint8_t secret[kSecretBytes];
  uint32_t magic;
  uint32_t version;
  int32_t fromRank;
  int32_t toRank;
  int32_t channel;  // -1: the control connection (failure notices)
  int32_t stream;
  uint32_t slotBytes;  // both ends must agree on the FIFO geometry
  uint32_t nslots;
};
static_assert(sizeof(ConnHello) == 64);

enum FrameKind : uint32_t { kData = 1, kFailure = 2, kWait = 3 };

struct FrameHeader {
  uint32_t kind;
  uint32_t bytes;
};
static_assert(sizeof(FrameHeader) == 8);

// What each rank publishes in the bootstrap round: where it listens.
struct ListenAddress {
  sockaddr_storage addr;
  uint32_t len;
  int32_t ok;  // 0: it could not listen (peers then fail instead of waiting)
};

// Who a connection is, once its hello checked out.
struct ConnKey {
  int fromRank;
  int channel;
  int stream;
};

// What the receiving side expects of every hello.
struct HelloExpect {
  Secret secret;
  int myRank;
  int nranks;
  int nchannels;
  int nstreams;
  uint32_t slotBytes;
  uint32_t nslots;
};

// Judges `n` bytes received as a hello.  The secret is compared first and
// in constant time; a wrong secret says nothing about the other fields.
Result<ConnKey> parseHello(const void* bytes, size_t n, const HelloExpect& expect);
// Judges a frame header: kind known, size within bounds for the kind.
Status checkFrameHeader(const FrameHeader& h, uint32_t slotBytes);

}  // namespace coll::sock
