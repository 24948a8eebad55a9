// flight_recorder_test.cc — the flight recorder's ring (record/flight_recorder.h):
// what a dump holds after calls begin, end, wait and fail; the ring keeps
// the newest entries; off records nothing; a dump taken while another
// thread records prints whole entries only.
#include <catch2/catch.hpp>

#include <atomic>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "record/flight_recorder.h"

using namespace coll::record;
using Catch::Matchers::Contains;

namespace {

const char* kindName(uint8_t k) { return k == 0 ? "allreduce" : "send"; }
const char* dtypeName(uint8_t) { return "float32"; }
const char* redopName(uint8_t) { return "sum"; }
const char* algoName(uint8_t) { return "ring"; }
const Names kNames{kindName, dtypeName, redopName, algoName};

CallInfo allreduce(int64_t collSeq, uint64_t count) {
  CallInfo c;
  c.collSeq = collSeq;
  c.count = count;
  c.kind = 0;
  c.dtype = 7;
  c.redop = 0;
  return c;
}

std::vector<std::string> lines(const std::string& text) {
  std::vector<std::string> out;
  std::stringstream ss(text);
  for (std::string l; std::getline(ss, l);) out.push_back(l);
  return out;
}

DumpHeader header() {
  DumpHeader h;
  h.comm = "00112233445566ff";
  h.rank = 1;
  h.nranks = 4;
  h.reason = "timeout";
  h.message = "rank 1 timed out \"quoted\"\nsecond line";
  return h;
}

}  // namespace

TEST_CASE("a dump has its header and every call with its state", "[record]") {
  FlightRecorder fr(8);
  const uint64_t a = fr.begin(allreduce(0, 100), CallState::Started);
  fr.setAlgo(a, 0, 2);
  fr.end(a, true);
  const uint64_t b = fr.begin(allreduce(1, 200), CallState::Started);
  fr.setWait(b, 3, 5, 12, "waiting for rank 3 in allreduce #1 step 5/12");
  const uint64_t c = fr.begin(allreduce(2, 300), CallState::Enqueued);
  CallInfo send;
  send.kind = 1;
  send.p2pSeq = 4;
  send.root = 2;
  const uint64_t d = fr.begin(send, CallState::Started);
  fr.setError(d, "peer died");
  fr.end(d, false);
  (void)c;
  const auto l = lines(fr.render(header(), kNames));
  REQUIRE(l.size() == 5);
  CHECK_THAT(l[0], Contains("\"type\":\"header\",\"version\":1,\"comm\":\"00112233445566ff\",\"rank\":1,\"nranks\":4"));
  CHECK_THAT(l[0], Contains("\"reason\":\"timeout\",\"message\":\"rank 1 timed out \\\"quoted\\\"\\nsecond line\""));
  CHECK_THAT(l[0], Contains("\"entries\":8,\"recorded\":4}"));
  CHECK_THAT(l[1], Contains("\"seq\":0,\"coll_seq\":0,\"p2p_seq\":-1,\"op\":\"allreduce\",\"count\":100"));
  CHECK_THAT(l[1], Contains("\"algo\":\"ring\",\"channels\":2,\"state\":\"completed\""));
  CHECK_THAT(l[1], Contains("\"wait_peer\":-1"));
  CHECK_THAT(l[2], Contains("\"state\":\"started\""));
  CHECK_THAT(l[2], Contains("\"wait_peer\":3,\"wait_step\":5,\"nsteps\":12,\"wait_what\":\"waiting for rank 3 in allreduce #1 step 5/12\""));
  CHECK_THAT(l[2], Contains("\"t_end_ns\":0"));
  CHECK_THAT(l[3], Contains("\"state\":\"enqueued\",\"t_enqueue_ns\":"));
  CHECK_THAT(l[3], Contains("\"t_start_ns\":0"));
  CHECK_THAT(l[4], Contains("\"p2p_seq\":4,\"op\":\"send\""));
  CHECK_THAT(l[4], Contains("\"redop\":\"\""));
  CHECK_THAT(l[4], Contains("\"root\":2"));
  CHECK_THAT(l[4], Contains("\"state\":\"failed\""));
  CHECK_THAT(l[4], Contains("\"error\":\"peer died\"}"));
}

TEST_CASE("calls that do not reduce have no redop; tiny calls show the board", "[record]") {
  FlightRecorder fr(4);
  CallInfo c = allreduce(0, 1);
  c.redop = kNone;
  const uint64_t h = fr.begin(c, CallState::Started);
  fr.setAlgo(h, kBoard, 1);
  const auto l = lines(fr.render(header(), kNames));
  CHECK_THAT(l[1], Contains("\"redop\":\"\""));
  CHECK_THAT(l[1], Contains("\"algo\":\"board\""));
}

TEST_CASE("times are CLOCK_REALTIME and ordered", "[record]") {
  FlightRecorder fr(4);
  const uint64_t h = fr.begin(allreduce(0, 1), CallState::Enqueued);
  std::this_thread::sleep_for(std::chrono::milliseconds(2));
  fr.start(h);
  std::this_thread::sleep_for(std::chrono::milliseconds(2));
  fr.end(h, true);
  const std::string line = lines(fr.render(header(), kNames))[1];
  auto num = [&](const char* key) {
    const size_t at = line.find(std::string("\"") + key + "\":");
    REQUIRE(at != std::string::npos);
    return std::stoll(line.substr(at + std::strlen(key) + 3));
  };
  const long long enq = num("t_enqueue_ns"), start = num("t_start_ns"), end = num("t_end_ns");
  const long long now = std::chrono::duration_cast<std::chrono::nanoseconds>(
                            std::chrono::system_clock::now().time_since_epoch()).count();
  CHECK(enq > 0);
  CHECK(start >= enq + 1'000'000);
  CHECK(end >= start + 1'000'000);
  CHECK(std::llabs(now - end) < 1'000'000'000LL);
}

TEST_CASE("the ring keeps the newest calls", "[record]") {
  FlightRecorder fr(3);
  for (int i = 0; i < 5; ++i) fr.end(fr.begin(allreduce(i, 10 + i), CallState::Started), true);
  const auto l = lines(fr.render(header(), kNames));
  REQUIRE(l.size() == 4);
  CHECK_THAT(l[0], Contains("\"entries\":3,\"recorded\":5}"));
  CHECK_THAT(l[1], Contains("\"seq\":2,\"coll_seq\":2"));
  CHECK_THAT(l[3], Contains("\"seq\":4,\"coll_seq\":4"));
}

TEST_CASE("a recorder of 0 entries is off", "[record]") {
  FlightRecorder fr(0);
  CHECK_FALSE(fr.on());
  const uint64_t h = fr.begin(allreduce(0, 1), CallState::Started);
  fr.setWait(h, 1, 1, 1, "x");
  fr.end(h, true);
  CHECK(lines(fr.render(header(), kNames)).size() == 1);
}

TEST_CASE("a dump beside a recording thread prints whole entries", "[record]") {
  FlightRecorder fr(16);
  std::atomic<bool> stop{false};
  std::thread writer([&] {
    for (int64_t i = 0; !stop.load(); ++i) {
      const uint64_t h = fr.begin(allreduce(i, static_cast<uint64_t>(i) * 3), CallState::Started);
      fr.setWait(h, static_cast<int>(i % 4), 1, 2, "w");
      fr.end(h, true);
    }
  });
  for (int d = 0; d < 200; ++d)
    for (const std::string& line : lines(fr.render(header(), kNames))) {
      if (line.find("\"type\":\"call\"") == std::string::npos) continue;
      // coll_seq i always comes with count 3i: a torn entry would not.
      const long long cs = std::stoll(line.substr(line.find("\"coll_seq\":") + 11));
      const long long count = std::stoll(line.substr(line.find("\"count\":") + 8));
      REQUIRE(count == 3 * cs);
    }
  stop = true;
  writer.join();
}
