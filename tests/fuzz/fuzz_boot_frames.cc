// fuzz_boot_frames — the bootstrap root reading one rank's stream of
// all-gather frames after its Hello: Frame{len} (boot::judgeFrame) then len
// payload bytes, until Done, an error or the end of the bytes (the rank
// hung up).  Mirrors Root::serveRounds for one rank.
//
// Input: [rank i32][stream bytes...]
// Properties: judgeFrame accepts exactly len <= kMaxFrame (a payload of len
// bytes follows) and kDoneLen (done, no payload), and rejects everything
// else with collRemoteError and the root's message naming the rank; no
// frame asks the root to hold more than kMaxFrame bytes.
#include <fmt/format.h>

#include "bootstrap/protocol.h"
#include "fuzz_common.h"

using namespace coll;
using namespace coll::boot;

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  using fuzz::append;
  std::vector<fuzz::Bytes> seeds;
  auto frames = [&](int32_t rank, std::vector<std::pair<uint32_t, std::string>> fs) {
    fuzz::Bytes b;
    append(b, rank);
    for (auto& [len, payload] : fs) {
      append(b, len);
      append(b, payload);
    }
    seeds.push_back(b);
  };
  frames(0, {{8, "peerinfo"}, {0, ""}, {kDoneLen, ""}});  // a round, a barrier, done
  frames(3, {{4, "shm0"}, {4, "shm1"}, {kDoneLen, ""}});
  frames(1, {{kMaxFrame, ""}});                            // the largest, cut short
  frames(2, {{kMaxFrame + 1, "x"}});                       // oversized
  frames(5, {{16, "short"}});                              // hung up mid-payload
  fuzz::maybeWriteSeeds(seeds);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  int32_t rank = fuzz::take<int32_t>(&data, &size);
  while (size >= sizeof(Frame)) {  // fewer bytes: the rank disconnected
    Frame f = fuzz::take<Frame>(&data, &size);
    auto r = judgeFrame(f.len, rank);
    if (!r.isOk()) {
      FUZZ_CHECK(f.len > kMaxFrame && f.len != kDoneLen);
      FUZZ_CHECK(r.status().code() == collRemoteError);
      FUZZ_CHECK(r.status().message() == fmt::format("bootstrap: rank {} sent an oversized frame", rank));
      break;
    }
    if (r.value().done) {
      FUZZ_CHECK(f.len == kDoneLen);
      FUZZ_CHECK(r.value().len == 0);
      break;
    }
    FUZZ_CHECK(f.len != kDoneLen && f.len <= kMaxFrame);
    FUZZ_CHECK(r.value().len == f.len);
    if (size < r.value().len) break;  // hung up mid-payload
    data += r.value().len;
    size -= r.value().len;
  }
  // The edges, with the fuzzed rank.
  FUZZ_CHECK(judgeFrame(kMaxFrame, rank).isOk() && !judgeFrame(kMaxFrame, rank).value().done);
  FUZZ_CHECK(!judgeFrame(kMaxFrame + 1, rank).isOk());
  FUZZ_CHECK(!judgeFrame(kDoneLen - 1, rank).isOk());
  FUZZ_CHECK(judgeFrame(kDoneLen, rank).isOk() && judgeFrame(kDoneLen, rank).value().done);
  return 0;
}
