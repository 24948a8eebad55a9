// fuzz_socket_frame — the socket transport's frame headers
// (sock::checkFrameHeader, transports/socket/socket_wire.h): read a stream
// of FrameHeader + payload as a receiver would, until a bad header or the
// end of the bytes.
//
// Input: [slotBytes u32][FrameHeader + payload]...
// Properties: a header is accepted iff it is kData with 1..slotBytes bytes
// or kFailure with 0..kMaxNoticeBytes bytes; an accepted header never asks
// for more than max(slotBytes, kMaxNoticeBytes) bytes; a rejection is
// collRemoteError.
#include <algorithm>

#include "fuzz_common.h"
#include "transports/socket/socket_wire.h"

using namespace coll;
using namespace coll::sock;

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  using fuzz::append;
  std::vector<fuzz::Bytes> seeds;
  auto seed = [&](uint32_t slot, std::vector<std::pair<FrameHeader, std::string>> fs) {
    fuzz::Bytes b;
    append(b, slot);
    for (auto& [h, payload] : fs) {
      append(b, h);
      append(b, payload);
    }
    seeds.push_back(b);
  };
  seed(16, {{{kData, 5}, "hello"}, {{kData, 16}, "0123456789abcdef"}, {{kFailure, 4}, "oops"}});
  seed(1 << 18, {{{kFailure, 0}, ""}, {{kData, 1 << 18}, "cut"}});
  seed(8, {{{kData, 0}, ""}});
  seed(8, {{{kData, 9}, "123456789"}});
  seed(8, {{{kFailure, kMaxNoticeBytes + 1}, "x"}});
  seed(8, {{{3, 1}, "x"}});
  fuzz::maybeWriteSeeds(seeds);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  uint32_t slotBytes = fuzz::take<uint32_t>(&data, &size);
  while (size >= sizeof(FrameHeader)) {
    FrameHeader h = fuzz::take<FrameHeader>(&data, &size);
    Status s = checkFrameHeader(h, slotBytes);
    bool valid = (h.kind == kData && h.bytes >= 1 && h.bytes <= slotBytes) ||
                 (h.kind == kFailure && h.bytes <= kMaxNoticeBytes) || (h.kind == kWait && h.bytes == 4);
    FUZZ_CHECK(s.isOk() == valid);
    if (!s.isOk()) {
      FUZZ_CHECK(s.code() == collRemoteError);
      FUZZ_CHECK(!s.message().empty());
      break;
    }
    FUZZ_CHECK(h.bytes <= std::max(slotBytes, kMaxNoticeBytes));
    if (size < h.bytes) break;  // the peer hung up mid-payload
    data += h.bytes;
    size -= h.bytes;
  }
  return 0;
}
