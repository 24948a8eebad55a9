// fuzz_secret — boot::parseSecret: the job secret as hex text (COLL_SECRET,
// set by collrun or a user).
//
// Input: the text.
// Properties:
//   - accepted iff 16..64 characters, an even count, all hex digits;
//   - the value is the hex digits' bytes, the rest of the 32 bytes zero;
//   - round trip: the lowercase and uppercase hex of the parsed bytes parse
//     to the same secret; secretTag is the first 6 bytes in lowercase hex;
//   - secretsEqual agrees with ==, also with one bit flipped.
#include <fmt/format.h>

#include "bootstrap/unique_id.h"
#include "fuzz_common.h"

using namespace coll;
using namespace coll::boot;

namespace {

int nibble(char ch) {
  if (ch >= '0' && ch <= '9') return ch - '0';
  if (ch >= 'a' && ch <= 'f') return ch - 'a' + 10;
  if (ch >= 'A' && ch <= 'F') return ch - 'A' + 10;
  return -1;
}

std::string hex(const Secret& s, size_t bytes, bool upper) {
  std::string out;
  for (size_t i = 0; i < bytes; ++i) out += upper ? fmt::format("{:02X}", s[i]) : fmt::format("{:02x}", s[i]);
  return out;
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  std::vector<fuzz::Bytes> seeds;
  for (const char* t : {"0123456789abcdef", "00112233445566778899AABBCCDDEEFF00112233445566778899aabbccddeeff",
                        "deadbeefcafef00d1234", "0123456789abcdeg", "abc"})
    seeds.emplace_back(t, t + strlen(t));
  fuzz::maybeWriteSeeds(seeds);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string text(reinterpret_cast<const char*>(data), size);
  bool allHex = true;
  for (char ch : text) allHex = allHex && nibble(ch) >= 0;
  bool valid = size >= 16 && size <= 2 * kSecretBytes && size % 2 == 0 && allHex;
  auto r = parseSecret(text);
  FUZZ_CHECK(r.isOk() == valid);
  if (!r.isOk()) {
    FUZZ_CHECK(r.status().code() == collInvalidArgument);
    return 0;
  }
  const Secret s = r.value();
  for (size_t i = 0; i < kSecretBytes; ++i) {
    int want = 2 * i < size ? nibble(text[2 * i]) * 16 + nibble(text[2 * i + 1]) : 0;
    FUZZ_CHECK(s[i] == want);
  }
  for (bool upper : {false, true}) {
    auto again = parseSecret(hex(s, size / 2, upper));
    FUZZ_CHECK(again.isOk() && again.value() == s);
  }
  FUZZ_CHECK(secretTag(s) == hex(s, 6, false));
  FUZZ_CHECK(secretsEqual(s, s));
  Secret t = s;
  t[data[0] % kSecretBytes] ^= static_cast<uint8_t>(1u << (data[size - 1] % 8));
  FUZZ_CHECK(!secretsEqual(s, t) && !secretsEqual(t, s));
  return 0;
}
