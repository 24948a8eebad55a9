// fuzz_boot_hello — the bootstrap root's judgment of a connecting rank's
// Hello (boot::judgeHello, protocol.h).
//
// Input: [flags u8][expectedNranks i32][hello bytes...]
//   flags bit 0: overwrite the hello's first 32 bytes with the job secret,
//                so the fuzzer spends its time behind the secret check.
//   expectedNranks < 0 is taken as 0 (the root does not know nranks yet).
// Properties:
//   - the verdict equals an independent model of the rules: wrong size,
//     secret or magic -> stranger (collRemoteError, dropped silently);
//     bad version/rank/nranks -> collInvalidUsage with the exact message;
//     else accepted with the hello's rank and nranks;
//   - an accepted hello carries exactly the job secret;
//   - round trip: the exact encoding of the fuzzed fields with the right
//     secret is accepted iff the fields are valid, and with one secret
//     byte flipped it is a stranger.
#include <fmt/format.h>

#include <string>

#include "bootstrap/protocol.h"
#include "fuzz_common.h"

using namespace coll;
using namespace coll::boot;

namespace {

Secret jobSecret() {
  Secret s{};
  for (size_t i = 0; i < s.size(); ++i) s[i] = static_cast<uint8_t>(i * 37 + 11);
  return s;
}

Hello makeHello(const Secret& s, uint32_t magic, uint32_t version, int32_t rank, int32_t nranks) {
  Hello h{};
  memcpy(h.secret, s.data(), kSecretBytes);
  h.magic = magic;
  h.version = version;
  h.rank = rank;
  h.nranks = nranks;
  return h;
}

bool fieldsValid(const Hello& h, int expected) {
  return h.version == kProtocolVersion && h.nranks > 0 && h.rank >= 0 && h.rank < h.nranks &&
         (expected == 0 || h.nranks == expected);
}

// Checks one judgment against the model.
void checkVerdict(const uint8_t* bytes, size_t n, const Secret& secret, int expected) {
  auto r = judgeHello(bytes, n, secret, expected);
  if (n != sizeof(Hello)) {
    FUZZ_CHECK(!r.isOk());
    FUZZ_CHECK(isStrangerRejection(r.status()));
    return;
  }
  Hello h;
  memcpy(&h, bytes, sizeof(h));
  bool secretOk = memcmp(h.secret, secret.data(), kSecretBytes) == 0;
  if (r.isOk()) FUZZ_CHECK(secretOk);  // nothing is accepted without the secret
  if (!secretOk || h.magic != kHelloMagic) {
    FUZZ_CHECK(!r.isOk());
    FUZZ_CHECK(r.status().code() == collRemoteError);
    FUZZ_CHECK(isStrangerRejection(r.status()));
    return;
  }
  if (!fieldsValid(h, expected)) {
    FUZZ_CHECK(!r.isOk());
    FUZZ_CHECK(r.status().code() == collInvalidUsage);
    FUZZ_CHECK(!isStrangerRejection(r.status()));
    std::string want;
    if (h.version != kProtocolVersion)
      want = fmt::format("rank {} speaks bootstrap protocol {}, the root {}: mixed libcoll versions", h.rank, h.version,
                         kProtocolVersion);
    else if (h.nranks <= 0 || h.rank < 0 || h.rank >= h.nranks)
      want = fmt::format("a rank says it is rank {} of {}: not a rank of such a job", h.rank, h.nranks);
    else
      want = fmt::format(
          "rank {} was started for a job of {} ranks, but the ranks before it for a job of {}: every rank must be "
          "given the same job size",
          h.rank, h.nranks, expected);
    FUZZ_CHECK(r.status().message() == want);
    return;
  }
  FUZZ_CHECK(r.isOk());
  FUZZ_CHECK(r.value().rank == h.rank);
  FUZZ_CHECK(r.value().nranks == h.nranks);
  FUZZ_CHECK(r.value().rank >= 0 && r.value().rank < r.value().nranks);
  if (expected > 0) FUZZ_CHECK(r.value().nranks == expected);
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  using fuzz::append;
  Secret s = jobSecret();
  std::vector<fuzz::Bytes> seeds;
  auto seed = [&](uint8_t flags, int32_t expected, const Hello& h) {
    fuzz::Bytes b;
    append(b, flags);
    append(b, expected);
    append(b, h);
    seeds.push_back(b);
  };
  seed(0, 0, makeHello(s, kHelloMagic, kProtocolVersion, 0, 4));  // first rank to arrive
  seed(0, 4, makeHello(s, kHelloMagic, kProtocolVersion, 3, 4));  // a later one
  seed(1, 4, makeHello(s, kHelloMagic, kProtocolVersion, 1, 2));  // nranks mismatch
  seed(1, 0, makeHello(s, kHelloMagic, 2, 0, 1));                 // other protocol version
  seed(1, 0, makeHello(s, kHelloMagic, kProtocolVersion, 5, 4));  // rank out of range
  Secret wrong = s;
  wrong[31] ^= 1;
  seed(0, 0, makeHello(wrong, kHelloMagic, kProtocolVersion, 0, 1));  // stranger
  seeds.push_back({0, 0, 0, 0, 0, 'h', 'e', 'l', 'l', 'o'});           // truncated
  fuzz::maybeWriteSeeds(seeds);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const Secret secret = jobSecret();
  uint8_t flags = fuzz::take<uint8_t>(&data, &size);
  int32_t expected = fuzz::take<int32_t>(&data, &size);
  if (expected < 0) expected = 0;
  std::vector<uint8_t> hello(data, data + size);
  if ((flags & 1) && hello.size() >= kSecretBytes) memcpy(hello.data(), secret.data(), kSecretBytes);

  // 1. The bytes as they came.
  checkVerdict(hello.data(), hello.size(), secret, expected);

  // 2. Round trip: the fuzzed fields, exactly encoded with the right secret.
  const uint8_t* p = hello.size() > kSecretBytes ? hello.data() + kSecretBytes : hello.data() + hello.size();
  size_t left = hello.size() > kSecretBytes ? hello.size() - kSecretBytes : 0;
  uint32_t magic = fuzz::take<uint32_t>(&p, &left);
  uint32_t version = fuzz::take<uint32_t>(&p, &left);
  int32_t rank = fuzz::take<int32_t>(&p, &left);
  int32_t nranks = fuzz::take<int32_t>(&p, &left);
  Hello h = makeHello(secret, kHelloMagic, version, rank, nranks);
  auto r = judgeHello(&h, sizeof(h), secret, expected);
  FUZZ_CHECK(r.isOk() == fieldsValid(h, expected));
  if (!r.isOk()) FUZZ_CHECK(!isStrangerRejection(r.status()));
  checkVerdict(reinterpret_cast<const uint8_t*>(&h), sizeof(h), secret, expected);
  // ... with the fuzzed magic.
  h.magic = magic;
  auto rm = judgeHello(&h, sizeof(h), secret, expected);
  if (magic != kHelloMagic) FUZZ_CHECK(!rm.isOk() && isStrangerRejection(rm.status()));
  h.magic = kHelloMagic;
  // ... and with one secret bit flipped: a stranger, whatever the fields say.
  h.secret[(flags >> 1) % kSecretBytes] ^= static_cast<uint8_t>(1u << (flags % 8));
  auto rw = judgeHello(&h, sizeof(h), secret, expected);
  FUZZ_CHECK(!rw.isOk() && isStrangerRejection(rw.status()));

  // 3. A valid hello built from the fuzzed numbers is always accepted.
  int32_t n = nranks == INT32_MIN ? 1 : (nranks < 0 ? -nranks : nranks);
  if (n == 0) n = 1;
  int32_t k = static_cast<int32_t>(static_cast<uint32_t>(rank) % static_cast<uint32_t>(n));
  Hello good = makeHello(secret, kHelloMagic, kProtocolVersion, k, n);
  auto rg = judgeHello(&good, sizeof(good), secret, 0);
  FUZZ_CHECK(rg.isOk() && rg.value().rank == k && rg.value().nranks == n);
  auto rg2 = judgeHello(&good, sizeof(good), secret, n);
  FUZZ_CHECK(rg2.isOk());
  return 0;
}
