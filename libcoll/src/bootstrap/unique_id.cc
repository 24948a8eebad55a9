#include "bootstrap/unique_id.h"

#include <sys/random.h>

#include <cerrno>
#include <cstring>

namespace coll::boot {
namespace {

constexpr uint32_t kIdMagic = 0x44494c43;  // "CLID"
constexpr uint16_t kIdVersion = 1;

// Layout inside the 128 bytes (host byte order: ids never leave the job's
// machines, which share one architecture).
struct Packed {
  uint32_t magic;
  uint16_t version;
  uint16_t addrLen;
  uint8_t addr[sizeof(sockaddr_in6)];  // sockaddr_in or sockaddr_in6
  uint8_t secret[kSecretBytes];
};
static_assert(sizeof(Packed) <= COLL_UNIQUE_ID_BYTES);

}  // namespace

collUniqueId encodeId(const IdContents& c) {
  collUniqueId id;
  memset(&id, 0, sizeof(id));
  Packed p{};
  p.magic = kIdMagic;
  p.version = kIdVersion;
  p.addrLen = static_cast<uint16_t>(std::min<size_t>(c.root.len, sizeof(p.addr)));
  memcpy(p.addr, &c.root.storage, p.addrLen);
  memcpy(p.secret, c.secret.data(), kSecretBytes);
  memcpy(id.internal, &p, sizeof(p));
  return id;
}

Result<IdContents> decodeId(const collUniqueId& id) {
  Packed p;
  memcpy(&p, id.internal, sizeof(p));
  if (p.magic != kIdMagic)
    return makeError(collInvalidArgument, "commId is not a collUniqueId (bad magic {:#x}); was it made by collGetUniqueId?", p.magic);
  if (p.version != kIdVersion)
    return makeError(collInvalidArgument, "commId has version {}, this libcoll speaks {}", p.version, kIdVersion);
  IdContents c;
  if (p.addrLen == 0 || p.addrLen > sizeof(p.addr))
    return makeError(collInvalidArgument, "commId holds a bad address length {}", p.addrLen);
  memcpy(&c.root.storage, p.addr, p.addrLen);
  c.root.len = p.addrLen;
  if (c.root.storage.ss_family != AF_INET && c.root.storage.ss_family != AF_INET6)
    return makeError(collInvalidArgument, "commId holds an unknown address family {}", c.root.storage.ss_family);
  // A length short of the family's sockaddr would fail only later, at
  // connect, with a message that hides the cause.
  size_t need = c.root.storage.ss_family == AF_INET ? sizeof(sockaddr_in) : sizeof(sockaddr_in6);
  if (p.addrLen < need)
    return makeError(collInvalidArgument, "commId holds a {}-byte address, an IPv{} address needs {}", p.addrLen,
                     c.root.storage.ss_family == AF_INET ? 4 : 6, need);
  memcpy(c.secret.data(), p.secret, kSecretBytes);
  return c;
}

Result<Secret> randomSecret() {
  Secret s{};
  size_t got = 0;
  while (got < s.size()) {
    ssize_t n = getrandom(s.data() + got, s.size() - got, 0);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return makeError(collSystemError, "getrandom failed: {}", strerror(errno));
    got += static_cast<size_t>(n);
  }
  return s;
}

Result<Secret> parseSecret(const std::string& hex) {
  if (hex.size() < 16 || hex.size() > 2 * kSecretBytes || hex.size() % 2 != 0)
    return makeError(collInvalidArgument, "COLL_SECRET must be 16 to 64 hex digits (an even count), got {} characters",
                     hex.size());
  Secret s{};
  for (size_t i = 0; i < hex.size(); i += 2) {
    auto nib = [](char ch) -> int {
      if (ch >= '0' && ch <= '9') return ch - '0';
      if (ch >= 'a' && ch <= 'f') return ch - 'a' + 10;
      if (ch >= 'A' && ch <= 'F') return ch - 'A' + 10;
      return -1;
    };
    int hi = nib(hex[i]), lo = nib(hex[i + 1]);
    if (hi < 0 || lo < 0) return makeError(collInvalidArgument, "COLL_SECRET has a non-hex character");
    s[i / 2] = static_cast<uint8_t>(hi * 16 + lo);
  }
  return s;
}

std::string secretTag(const Secret& s) {
  return fmt::format("{:02x}{:02x}{:02x}{:02x}{:02x}{:02x}", s[0], s[1], s[2], s[3], s[4], s[5]);
}

bool secretsEqual(const Secret& a, const Secret& b) {
  uint8_t diff = 0;
  for (size_t i = 0; i < a.size(); ++i) diff |= static_cast<uint8_t>(a[i] ^ b[i]);
  return diff == 0;
}

}  // namespace coll::boot
