// chunking_test.cc — splitEven and friends: parts tile the range, respect
// the maximum, are 16-aligned when big enough, otherwise differ by <= 1.
#include <catch2/catch.hpp>

#include "schedule/chunking.h"

using namespace coll::sched::detail;

TEST_CASE("splitEven tiles the range in order", "[chunking]") {
  for (size_t total : {size_t{0}, size_t{1}, size_t{5}, size_t{15}, size_t{16}, size_t{17},
                       size_t{100}, size_t{1009}, size_t{4096}, size_t{65537}})
    for (size_t parts : {size_t{1}, size_t{2}, size_t{3}, size_t{7}, size_t{16}, size_t{17}})
      for (size_t maxPart : {size_t{1}, size_t{3}, size_t{16}, size_t{48}, size_t{1024}, kNoLimit}) {
        if (satMul(parts, maxPart) < total) continue;  // precondition
        INFO("total " << total << " parts " << parts << " max " << maxPart);
        size_t at = 0, minLen = SIZE_MAX, maxLen = 0;
        bool allAligned = true;
        for (size_t i = 0; i < parts; ++i) {
          const Range r = splitEven(total, parts, i, maxPart);
          REQUIRE(r.off == at);
          REQUIRE(r.len <= maxPart);
          at += r.len;
          minLen = std::min(minLen, r.len);
          maxLen = std::max(maxLen, r.len);
          if (i + 1 < parts && r.len % kAlignElems != 0) allAligned = false;
        }
        REQUIRE(at == total);
        const bool alignable = total / parts >= kAlignElems &&
                               (maxPart == kNoLimit || maxPart % kAlignElems == 0);
        if (alignable) {
          CHECK(allAligned);
          CHECK(maxLen - minLen < 2 * kAlignElems);
        } else {
          CHECK(maxLen - minLen <= 1);
        }
      }
}

TEST_CASE("effectiveChunk never exceeds chunkElems and is 16-aligned when >= 16",
          "[chunking]") {
  CHECK(effectiveChunk(1) == 1);
  CHECK(effectiveChunk(3) == 3);
  CHECK(effectiveChunk(15) == 15);
  CHECK(effectiveChunk(16) == 16);
  CHECK(effectiveChunk(17) == 16);
  CHECK(effectiveChunk(1000) == 992);
  CHECK(effectiveChunk(SIZE_MAX) % 16 == 0);
  CHECK(satMul(SIZE_MAX / 2, 3) == SIZE_MAX);
  CHECK(satMul(7, 6) == 42);
  CHECK(chunksFor(0, 16) == 0);
  CHECK(chunksFor(33, 16) == 3);
}

TEST_CASE("channel parts: small counts spread one by one / big ones aligned", "[chunking]") {
  coll::sched::Chunking c{4, 1 << 16};
  CHECK(channelPart(7, c, 0).len == 2);
  CHECK(channelPart(7, c, 3).len == 1);
  CHECK(channelPart(3, c, 3).len == 0);  // more channels than elements: some empty
  CHECK(channelPart(1000, c, 0).len == 256);
  CHECK(channelPart(1000, c, 3).len == 248);  // 240 + the 8 left over
  CHECK(channelPart(1000, c, 3).off == 752);
}
