// fuzz_socket_hello — the socket transport's connection handshake
// (sock::parseHello, transports/socket/socket_wire.h): the first bytes any
// process that reaches a rank's listening port sends.
//
// Input: [flags u8][myRank i32][nranks i32][nchannels i32][nstreams i32]
//        [slotBytes u32][nslots u32][hello bytes...]
//   flags bit 0: overwrite the hello's first 32 bytes with the job secret;
//   flags bit 1: also write the right magic and version (deep paths).
// Properties:
//   - the verdict equals an independent model of the rules (size, secret,
//     magic/version, fromRank, toRank, channel/stream, geometry); a wrong
//     secret is rejected whatever else the bytes say;
//   - an accepted hello carries exactly the expected secret and the key is
//     its (fromRank, channel, stream);
//   - round trip: the exact encoding of a valid hello for this expectation
//     is accepted, and with one secret bit flipped it is rejected.
#include "fuzz_common.h"
#include "transports/socket/socket_wire.h"

using namespace coll;
using namespace coll::sock;

namespace {

Secret jobSecret() {
  Secret s{};
  for (size_t i = 0; i < s.size(); ++i) s[i] = static_cast<uint8_t>(0xa5 ^ (i * 29));
  return s;
}

// The rules, written again from socket_wire.h's comments.
bool modelAccepts(const ConnHello& h, const HelloExpect& e) {
  if (memcmp(h.secret, e.secret.data(), kSecretBytes) != 0) return false;
  if (h.magic != kConnMagic || h.version != kConnVersion) return false;
  if (h.fromRank < 0 || h.fromRank >= e.nranks || h.fromRank == e.myRank) return false;
  if (h.toRank != e.myRank) return false;
  // Channel -1 is the control connection (stream 0 only); the stream must be
  // below nstreams for it too (an expectation with nstreams <= 0 accepts
  // nothing).
  if (h.channel < -1 || h.channel >= e.nchannels) return false;
  if (h.stream < 0 || h.stream >= e.nstreams || (h.channel == -1 && h.stream != 0)) return false;
  return h.slotBytes == e.slotBytes && h.nslots == e.nslots;
}

void checkVerdict(const uint8_t* bytes, size_t n, const HelloExpect& e) {
  auto r = parseHello(bytes, n, e);
  if (n != sizeof(ConnHello)) {
    FUZZ_CHECK(!r.isOk());
    return;
  }
  ConnHello h;
  memcpy(&h, bytes, sizeof(h));
  bool ok = modelAccepts(h, e);
  FUZZ_CHECK(r.isOk() == ok);
  if (memcmp(h.secret, e.secret.data(), kSecretBytes) != 0) {
    FUZZ_CHECK(!r.isOk());
    FUZZ_CHECK(r.status().message() == "wrong job secret");  // says nothing about the rest
  }
  if (r.isOk()) {
    FUZZ_CHECK(memcmp(h.secret, e.secret.data(), kSecretBytes) == 0);
    FUZZ_CHECK(r.value().fromRank == h.fromRank && r.value().channel == h.channel && r.value().stream == h.stream);
  } else {
    FUZZ_CHECK(r.status().code() == collRemoteError || r.status().code() == collInvalidUsage);
    FUZZ_CHECK(!r.status().message().empty());
  }
}

ConnHello makeHello(const HelloExpect& e, int from, int channel, int stream) {
  ConnHello h{};
  memcpy(h.secret, e.secret.data(), kSecretBytes);
  h.magic = kConnMagic;
  h.version = kConnVersion;
  h.fromRank = from;
  h.toRank = e.myRank;
  h.channel = channel;
  h.stream = stream;
  h.slotBytes = e.slotBytes;
  h.nslots = e.nslots;
  return h;
}

uint32_t mod(int32_t v, int32_t m) { return static_cast<uint32_t>(v) % static_cast<uint32_t>(m); }

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  using fuzz::append;
  std::vector<fuzz::Bytes> seeds;
  auto seed = [&](uint8_t flags, const HelloExpect& e, const ConnHello& h) {
    fuzz::Bytes b;
    append(b, flags);
    for (int32_t v : {e.myRank, e.nranks, e.nchannels, e.nstreams}) append(b, v);
    append(b, e.slotBytes);
    append(b, e.nslots);
    append(b, h);
    seeds.push_back(b);
  };
  HelloExpect e{jobSecret(), 1, 4, 2, 1, 256 << 10, 4};
  seed(0, e, makeHello(e, 0, 0, 0));   // data connection
  seed(0, e, makeHello(e, 3, -1, 0));  // control connection
  seed(1, e, makeHello(e, 1, 0, 0));   // from myself
  ConnHello g = makeHello(e, 2, 1, 0);
  g.nslots = 8;                        // geometry mismatch
  seed(3, e, g);
  ConnHello w = makeHello(e, 2, 0, 0);
  w.secret[0] ^= 0x80;                 // wrong secret
  seed(0, e, w);
  fuzz::maybeWriteSeeds(seeds);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  uint8_t flags = fuzz::take<uint8_t>(&data, &size);
  HelloExpect e{};
  e.secret = jobSecret();
  e.myRank = fuzz::take<int32_t>(&data, &size);
  e.nranks = fuzz::take<int32_t>(&data, &size);
  e.nchannels = fuzz::take<int32_t>(&data, &size);
  e.nstreams = fuzz::take<int32_t>(&data, &size);
  e.slotBytes = fuzz::take<uint32_t>(&data, &size);
  e.nslots = fuzz::take<uint32_t>(&data, &size);
  std::vector<uint8_t> bytes(data, data + size);
  if ((flags & 1) && bytes.size() >= kSecretBytes) memcpy(bytes.data(), e.secret.data(), kSecretBytes);
  if ((flags & 2) && bytes.size() >= offsetof(ConnHello, fromRank)) {
    uint32_t mv[2] = {kConnMagic, kConnVersion};
    memcpy(bytes.data() + offsetof(ConnHello, magic), mv, sizeof(mv));
  }

  // 1. The bytes as they came, with the expectation as it came (even a
  //    nonsensical one must not crash or accept a wrong secret).
  checkVerdict(bytes.data(), bytes.size(), e);

  // 2. Round trip with a sane expectation derived from the fuzzed one.
  HelloExpect s = e;
  s.nranks = 2 + static_cast<int>(mod(e.nranks, 1024));
  s.myRank = static_cast<int>(mod(e.myRank, s.nranks));
  s.nchannels = 1 + static_cast<int>(mod(e.nchannels, 64));
  s.nstreams = 1 + static_cast<int>(mod(e.nstreams, 8));
  int from = static_cast<int>((s.myRank + 1 + mod(e.nranks ^ e.myRank, s.nranks - 1)) % s.nranks);
  FUZZ_CHECK(from != s.myRank);
  bool control = flags & 4;
  int channel = control ? -1 : static_cast<int>(mod(e.nchannels ^ flags, s.nchannels));
  int stream = control ? 0 : static_cast<int>(mod(e.nstreams, s.nstreams));
  ConnHello h = makeHello(s, from, channel, stream);
  auto r = parseHello(&h, sizeof(h), s);
  FUZZ_CHECK(r.isOk());
  FUZZ_CHECK(r.value().fromRank == from && r.value().channel == channel && r.value().stream == stream);
  checkVerdict(reinterpret_cast<const uint8_t*>(&h), sizeof(h), s);
  h.secret[(flags >> 3) % kSecretBytes] ^= static_cast<uint8_t>(1u << (flags % 8));
  FUZZ_CHECK(!parseHello(&h, sizeof(h), s).isOk());
  // The fuzzed bytes against the sane expectation too.
  checkVerdict(bytes.data(), bytes.size(), s);
  return 0;
}
