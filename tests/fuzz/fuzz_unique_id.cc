// fuzz_unique_id — boot::decodeId: the 128 bytes of a collUniqueId, which a
// user passes around (files, MPI, sockets) and gives back to us.
//
// Input: up to COLL_UNIQUE_ID_BYTES raw id bytes (zero-padded), then the
// same bytes are reused as fields for the round trip.
// Properties:
//   - an accepted id holds an AF_INET/AF_INET6 address of 1..sizeof(sockaddr_in6)
//     bytes (never more than sockaddr_storage);
//   - decodeId(encodeId(decodeId(x))) == decodeId(x) and encodeId of it is
//     stable (encode/decode is a fixed point after one step);
//   - decodeId(encodeId(c)) == c for any well-formed c built from the input
//     (IPv4 or IPv6 address with any bytes and port, any secret);
//   - toString() of any accepted address does not crash.
#include "bootstrap/unique_id.h"
#include "fuzz_common.h"

using namespace coll;
using namespace coll::boot;

namespace {

bool sameContents(const IdContents& a, const IdContents& b) {
  return a.root.len == b.root.len && memcmp(&a.root.storage, &b.root.storage, a.root.len) == 0 &&
         a.root.storage.ss_family == b.root.storage.ss_family && a.secret == b.secret;
}

bool sameId(const collUniqueId& a, const collUniqueId& b) { return memcmp(&a, &b, sizeof(a)) == 0; }

IdContents v4(uint32_t ip, uint16_t port, uint8_t fill) {
  IdContents c;
  auto* a = reinterpret_cast<sockaddr_in*>(&c.root.storage);
  a->sin_family = AF_INET;
  a->sin_addr.s_addr = ip;
  a->sin_port = port;
  c.root.len = sizeof(sockaddr_in);
  for (size_t i = 0; i < c.secret.size(); ++i) c.secret[i] = static_cast<uint8_t>(fill + i);
  return c;
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  std::vector<fuzz::Bytes> seeds;
  auto seed = [&](const IdContents& c) {
    collUniqueId id = encodeId(c);
    seeds.emplace_back(reinterpret_cast<uint8_t*>(id.internal), reinterpret_cast<uint8_t*>(id.internal) + sizeof(id));
  };
  seed(v4(htonl(INADDR_LOOPBACK), htons(29500), 1));
  seed(v4(htonl(0x0a000001), htons(1), 0xf0));
  IdContents c6;
  auto* a6 = reinterpret_cast<sockaddr_in6*>(&c6.root.storage);
  a6->sin6_family = AF_INET6;
  a6->sin6_addr = in6addr_loopback;
  a6->sin6_port = htons(4242);
  c6.root.len = sizeof(sockaddr_in6);
  seed(c6);
  collUniqueId zero{};
  seeds.emplace_back(reinterpret_cast<uint8_t*>(zero.internal), reinterpret_cast<uint8_t*>(zero.internal) + sizeof(zero));
  fuzz::maybeWriteSeeds(seeds);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  collUniqueId id;
  memset(&id, 0, sizeof(id));
  memcpy(id.internal, data, std::min(size, sizeof(id.internal)));

  // 1. Arbitrary bytes.
  auto r = decodeId(id);
  if (r.isOk()) {
    const IdContents& c = r.value();
    FUZZ_CHECK(c.root.storage.ss_family == AF_INET || c.root.storage.ss_family == AF_INET6);
    FUZZ_CHECK(c.root.len >= (c.root.storage.ss_family == AF_INET ? sizeof(sockaddr_in) : sizeof(sockaddr_in6)) &&
               c.root.len <= sizeof(sockaddr_in6));
    FUZZ_CHECK(c.root.len <= sizeof(c.root.storage));
    collUniqueId again = encodeId(c);
    auto r2 = decodeId(again);
    FUZZ_CHECK(r2.isOk());
    FUZZ_CHECK(sameContents(r2.value(), c));
    FUZZ_CHECK(sameId(encodeId(r2.value()), again));
    std::string text = c.root.toString();
    FUZZ_CHECK(!text.empty());
  } else {
    FUZZ_CHECK(r.status().code() == collInvalidArgument);
    FUZZ_CHECK(!r.status().message().empty());
  }

  // 2. Round trip of a well-formed id built from the input.
  const uint8_t* p = data;
  size_t n = size;
  uint8_t family = fuzz::take<uint8_t>(&p, &n);
  uint16_t port = fuzz::take<uint16_t>(&p, &n);
  IdContents c;
  if (family & 1) {
    auto* a = reinterpret_cast<sockaddr_in6*>(&c.root.storage);
    a->sin6_family = AF_INET6;
    a->sin6_port = port;
    a->sin6_flowinfo = fuzz::take<uint32_t>(&p, &n);
    a->sin6_addr = fuzz::take<in6_addr>(&p, &n);
    a->sin6_scope_id = fuzz::take<uint32_t>(&p, &n);
    c.root.len = sizeof(sockaddr_in6);
  } else {
    auto* a = reinterpret_cast<sockaddr_in*>(&c.root.storage);
    a->sin_family = AF_INET;
    a->sin_port = port;
    a->sin_addr = fuzz::take<in_addr>(&p, &n);
    c.root.len = sizeof(sockaddr_in);
  }
  c.secret = fuzz::take<Secret>(&p, &n);
  auto rt = decodeId(encodeId(c));
  FUZZ_CHECK(rt.isOk());
  FUZZ_CHECK(sameContents(rt.value(), c));
  return 0;
}
