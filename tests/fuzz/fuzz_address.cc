// fuzz_address — net::parseAddress: "host:port" / "[v6]:port" text
// (COLL_ROOT, COLL_ROOT_ADDR).
//
// Input: the text.
// Properties:
//   - accepted text holds no NUL and its port is plain digits, parsed as
//     that number (<= 65535): "+80", " 80", "-0" are refused;
//   - an accepted address is AF_INET with len sizeof(sockaddr_in) or AF_INET6
//     with len sizeof(sockaddr_in6); text without ':' is never accepted;
//   - parseAddress(a.toString()) round-trips (family, address bytes, port);
//   - for an address built from the input's bytes (IPv4 or IPv6, any port),
//     parseAddress(toString()) gives it back.
#include <arpa/inet.h>

#include <algorithm>

#include "fuzz_common.h"
#include "coll/base/socket.h"

using namespace coll;
using namespace coll::net;

namespace {

bool sameEndpoint(const Address& a, const Address& b) {
  if (a.storage.ss_family != b.storage.ss_family || a.len != b.len) return false;
  if (a.storage.ss_family == AF_INET) {
    auto* x = reinterpret_cast<const sockaddr_in*>(&a.storage);
    auto* y = reinterpret_cast<const sockaddr_in*>(&b.storage);
    return x->sin_port == y->sin_port && x->sin_addr.s_addr == y->sin_addr.s_addr;
  }
  auto* x = reinterpret_cast<const sockaddr_in6*>(&a.storage);
  auto* y = reinterpret_cast<const sockaddr_in6*>(&b.storage);
  return x->sin6_port == y->sin6_port && memcmp(&x->sin6_addr, &y->sin6_addr, sizeof(in6_addr)) == 0;
}

void checkAccepted(const Address& a) {
  bool v4 = a.storage.ss_family == AF_INET && a.len == sizeof(sockaddr_in);
  bool v6 = a.storage.ss_family == AF_INET6 && a.len == sizeof(sockaddr_in6);
  FUZZ_CHECK(v4 || v6);
  std::string text = a.toString();
  FUZZ_CHECK(text.find(':') != std::string::npos);
  FUZZ_CHECK(v6 == (text[0] == '['));
  auto again = parseAddress(text);
  FUZZ_CHECK(again.isOk());
  FUZZ_CHECK(sameEndpoint(again.value(), a));
  FUZZ_CHECK(again.value().toString() == text);
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  std::vector<fuzz::Bytes> seeds;
  for (const char* t : {"127.0.0.1:29500", "localhost:0", "[::1]:65535", "[fe80::1:2:3:4]:8080",
                        "[::ffff:10.0.0.1]:1", "10.1.2.3:65536", "host:12", "[::1:80"})
    seeds.emplace_back(t, t + strlen(t));
  fuzz::maybeWriteSeeds(seeds);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string text(reinterpret_cast<const char*>(data), size);
  auto r = parseAddress(text);
  if (r.isOk()) {
    FUZZ_CHECK(text.find(':') != std::string::npos);
    checkAccepted(r.value());
    // Accepted text has no NUL and a port of plain digits, which is that
    // port (so never above 65535).
    std::string port = text.substr(text.rfind(':') + 1);
    FUZZ_CHECK(text.find('\0') == std::string::npos);
    FUZZ_CHECK(!port.empty() && port.find_first_not_of("0123456789") == std::string::npos);
    std::string significant = port.substr(std::min(port.find_first_not_of('0'), port.size() - 1));
    FUZZ_CHECK(significant.size() <= 5);
    FUZZ_CHECK(std::stoul(significant) == ntohs(reinterpret_cast<const sockaddr_in*>(&r.value().storage)->sin_port));
  } else {
    FUZZ_CHECK(r.status().code() == collInvalidArgument);
  }

  // Round trip of an address built from the bytes.
  const uint8_t* p = data;
  size_t n = size;
  uint8_t family = fuzz::take<uint8_t>(&p, &n);
  uint16_t port = fuzz::take<uint16_t>(&p, &n);
  Address a;
  if (family & 1) {
    auto* s6 = reinterpret_cast<sockaddr_in6*>(&a.storage);
    s6->sin6_family = AF_INET6;
    s6->sin6_port = port;
    s6->sin6_addr = fuzz::take<in6_addr>(&p, &n);
    a.len = sizeof(sockaddr_in6);
  } else {
    auto* s4 = reinterpret_cast<sockaddr_in*>(&a.storage);
    s4->sin_family = AF_INET;
    s4->sin_port = port;
    s4->sin_addr = fuzz::take<in_addr>(&p, &n);
    a.len = sizeof(sockaddr_in);
  }
  checkAccepted(a);
  return 0;
}
