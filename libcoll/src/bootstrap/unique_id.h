// unique_id.h — what a collUniqueId holds: the root's address and a random
// job secret.  Every connection to the root proves it knows the secret
// before anything else it sends is read.
#pragma once

#include <array>
#include <cstdint>
#include <string>

#include "coll/base/socket.h"
#include "coll.h"

namespace coll::boot {

constexpr size_t kSecretBytes = 32;
using Secret = std::array<uint8_t, kSecretBytes>;

struct IdContents {
  net::Address root;
  Secret secret{};
};

collUniqueId encodeId(const IdContents& c);
Result<IdContents> decodeId(const collUniqueId& id);

Result<Secret> randomSecret();
// 64 hex digits <-> Secret (COLL_SECRET; collrun's is shorter and padded).
Result<Secret> parseSecret(const std::string& hex);
// A short tag derived from the secret, safe in file names (shm segments).
std::string secretTag(const Secret& s);
// Constant-time comparison.
bool secretsEqual(const Secret& a, const Secret& b);

}  // namespace coll::boot
