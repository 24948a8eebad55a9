// fuzz_common.h — what every libFuzzer target in tests/fuzz shares:
//  - FUZZ_CHECK(cond): a violated property prints itself and traps (libFuzzer
//    reports a crash and saves the input);
//  - seed writing: run a target with COLL_FUZZ_SEEDS_OUT=<dir> and it writes
//    its seed corpus (valid encodings built from the real structs, so seeds
//    follow the wire format when it changes) into <dir> and exits.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#define FUZZ_CHECK(cond)                                                                \
  do {                                                                                  \
    if (!(cond)) {                                                                      \
      std::fprintf(stderr, "fuzz property violated: %s (%s:%d)\n", #cond, __FILE__, __LINE__); \
      __builtin_trap();                                                                 \
    }                                                                                   \
  } while (0)

namespace fuzz {

using Bytes = std::vector<uint8_t>;

template <typename T>
inline void append(Bytes& b, const T& v) {
  const auto* p = reinterpret_cast<const uint8_t*>(&v);
  b.insert(b.end(), p, p + sizeof(T));
}
inline void append(Bytes& b, const std::string& s) { b.insert(b.end(), s.begin(), s.end()); }

// Reads a T from the front of [*data, *data + *n) (zero-padded when short).
template <typename T>
inline T take(const uint8_t** data, size_t* n) {
  T v{};
  size_t k = *n < sizeof(T) ? *n : sizeof(T);
  if (k) std::memcpy(&v, *data, k);
  *data += k;
  *n -= k;
  return v;
}

// Called from LLVMFuzzerInitialize: writes the seeds and exits when asked to.
inline void maybeWriteSeeds(const std::vector<Bytes>& seeds) {
  const char* dir = std::getenv("COLL_FUZZ_SEEDS_OUT");
  if (!dir || !*dir) return;
  for (size_t i = 0; i < seeds.size(); ++i) {
    std::string path = std::string(dir) + "/seed-" + std::to_string(i);
    FILE* f = std::fopen(path.c_str(), "wb");
    if (!f || std::fwrite(seeds[i].data(), 1, seeds[i].size(), f) != seeds[i].size()) {
      std::fprintf(stderr, "cannot write %s\n", path.c_str());
      std::exit(1);
    }
    std::fclose(f);
  }
  std::fprintf(stderr, "wrote %zu seeds to %s\n", seeds.size(), dir);
  std::exit(0);
}

}  // namespace fuzz
