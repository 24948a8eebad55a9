// fr_dump_test.cc — a dump file's text to structs and back
// (tools/trace/fr_dump.h): the format's round trip, unknown members
// ignored, and every break of the contract refused as "file:line: what".
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "fr_dump.h"

using namespace coll::trace;

namespace {

FrCall collective(int64_t seq, int64_t collSeq, FrOp op = FrOp::AllReduce) {
  FrCall c;
  c.seq = seq;
  c.collSeq = collSeq;
  c.op = op;
  c.count = 1024;
  c.dtype = "float32";
  c.redop = op == FrOp::AllReduce ? "sum" : "";
  c.root = op == FrOp::Broadcast ? 1 : -1;
  c.buffer = "host";
  c.algo = "ring";
  c.channels = 2;
  c.state = FrState::Completed;
  c.tEnqueueNs = 1000 + seq;
  c.tStartNs = 2000 + seq;
  c.tEndNs = 3000 + seq;
  return c;
}

FrCall p2p(int64_t seq, FrOp op, int peer, int64_t k) {
  FrCall c = collective(seq, -1);
  c.op = op;
  c.collSeq = -1;
  c.p2pSeq = k;
  c.root = peer;
  c.redop = "";
  return c;
}

// Rank 1 of 4: a ring of 8 that overwrote 2 calls.
FrDump sample() {
  FrDump d;
  d.header.comm = "3f2a9c0d11e5b7a4";
  d.header.rank = 1;
  d.header.nranks = 4;
  d.header.host = "node\"1\"\t\xC3\xA9";
  d.header.pid = 4242;
  d.header.reason = "timeout";
  d.header.message = "rank 1 timed out\nafter 30 s";
  d.header.timeNs = 1795910400000000000;
  d.header.entries = 8;
  d.header.recorded = 7;
  d.calls = {collective(2, 1), p2p(3, FrOp::Send, 2, 0), p2p(4, FrOp::Recv, 0, 0), collective(5, 2, FrOp::Broadcast),
             p2p(6, FrOp::Send, 2, 1)};
  FrCall& last = d.calls.back();
  last.state = FrState::Started;
  last.tEndNs = 0;
  last.waitPeer = 2;
  last.waitStep = 0;
  last.nsteps = 1;
  last.waitWhat = "waiting for rank 2 to post recv #1";
  return d;
}

std::vector<std::string> linesOf(const std::string& text) {
  std::vector<std::string> out;
  size_t pos = 0;
  while (pos < text.size()) {
    const size_t nl = text.find('\n', pos);
    out.push_back(text.substr(pos, nl - pos));
    pos = nl + 1;
  }
  return out;
}

std::string join(const std::vector<std::string>& lines) {
  std::string out;
  for (const std::string& l : lines) out += l + "\n";
  return out;
}

// The sample's text with `from` replaced by `to` on line `line` (1-based).
std::string edited(size_t line, const std::string& from, const std::string& to) {
  auto lines = linesOf(formatDump(sample()));
  const size_t at = lines.at(line - 1).find(from);
  INFO("line " << line << " lacks " << from);
  REQUIRE(at != std::string::npos);
  lines[line - 1].replace(at, from.size(), to);
  return join(lines);
}

std::string refused(const std::string& text) {
  auto r = parseDump("d/f.jsonl", text);
  REQUIRE_FALSE(r.isOk());
  CHECK(r.status().code() == collInvalidArgument);
  return r.status().message();
}

}  // namespace

TEST_CASE("fr_dump: the format round-trips", "[trace][dump]") {
  const FrDump d = sample();
  const std::string text = formatDump(d);
  CHECK(linesOf(text).size() == 6);
  CHECK(text.back() == '\n');
  auto r = parseDump("f.jsonl", text);
  INFO(r.status().message());
  REQUIRE(r.isOk());
  CHECK(r.value() == d);
  CHECK(r.value().header.message == "rank 1 timed out\nafter 30 s");
  CHECK(r.value().calls[4].state == FrState::Started);
  CHECK(r.value().calls[1].op == FrOp::Send);
  CHECK(r.value().truncated());
  // Without the final newline, and with CRLF line ends, the same.
  auto noNewline = parseDump("f.jsonl", text.substr(0, text.size() - 1));
  REQUIRE(noNewline.isOk());
  CHECK(noNewline.value() == d);
  std::string crlf;
  for (const std::string& l : linesOf(text)) crlf += l + "\r\n";
  auto crlfDump = parseDump("f.jsonl", crlf);
  REQUIRE(crlfDump.isOk());
  CHECK(crlfDump.value() == d);
}

TEST_CASE("fr_dump: a header alone, an untruncated ring", "[trace][dump]") {
  FrDump d = sample();
  d.calls.clear();
  d.header.recorded = 0;
  auto r = parseDump("f.jsonl", formatDump(d));
  REQUIRE(r.isOk());
  CHECK(r.value().calls.empty());
  CHECK_FALSE(r.value().truncated());
  d = sample();
  for (FrCall& c : d.calls) c.seq -= 2;
  d.header.recorded = 5;
  r = parseDump("f.jsonl", formatDump(d));
  REQUIRE(r.isOk());
  CHECK_FALSE(r.value().truncated());
}

TEST_CASE("fr_dump: unknown members of any kind are ignored", "[trace][dump]") {
  std::string text = edited(1, "\"version\":1,", "\"version\":1,\"future\":{\"a\":[1,2,{\"b\":null}]},\"f\":1.5,");
  auto lines = linesOf(text);
  lines[2].insert(lines[2].size() - 1, ",\"gpu\":\"sm_90\",\"bytes\":[1,2],\"ok\":true,\"big\":18446744073709551616");
  auto r = parseDump("f.jsonl", join(lines));
  INFO(r.status().message());
  REQUIRE(r.isOk());
  CHECK(r.value() == sample());
}

TEST_CASE("fr_dump: every break of the contract names file, line and what", "[trace][dump]") {
  struct Bad {
    std::string text;
    std::string message;
  };
  const std::string good = formatDump(sample());
  const auto lines = linesOf(good);
  const Bad bad[] = {
      {"", "d/f.jsonl:1: empty file: expected the header line"},
      {join({lines[1]}), "d/f.jsonl:1: the first line is type \"call\", not the \"header\""},
      {edited(1, "\"version\":1", "\"version\":2"), "d/f.jsonl:1: version 2: this reader knows version 1 only"},
      {edited(1, "\"version\":1,", ""), "d/f.jsonl:1: member \"version\" is missing"},
      {edited(1, "\"type\":\"header\",", ""), "d/f.jsonl:1: member \"type\" is missing"},
      {edited(1, "\"type\":\"header\"", "\"type\":7"), "d/f.jsonl:1: member \"type\" must be a string, not an integer"},
      {edited(1, "\"host\":\"node\\\"1\\\"\\t\xC3\xA9\",", ""), "d/f.jsonl:1: member \"host\" is missing"},
      {edited(1, "\"rank\":1", "\"rank\":\"1\""), "d/f.jsonl:1: member \"rank\" must be an integer, not a string"},
      {edited(1, "\"pid\":4242", "\"pid\":42.5"),
       "d/f.jsonl:1: member \"pid\" must be an integer, not a number that is not a 64-bit integer"},
      {edited(1, "\"pid\":4242", "\"pid\":99999999999999999999"),
       "d/f.jsonl:1: member \"pid\" must be an integer, not a number that is not a 64-bit integer"},
      {edited(1, "\"rank\":1", "\"rank\":1,\"rank\":1"), "d/f.jsonl:1: member \"rank\" appears twice"},
      {edited(1, "\"comm\":\"3f2a9c0d11e5b7a4\"", "\"comm\":\"3f2a9c0d11e5b7a\""),
       "d/f.jsonl:1: member \"comm\" is \"3f2a9c0d11e5b7a\", not 16 hex digits"},
      {edited(1, "\"comm\":\"3f2a9c0d11e5b7a4\"", "\"comm\":\"3f2a9c0d11e5b7ag\""), "not 16 hex digits"},
      {edited(1, "\"rank\":1", "\"rank\":4"), "d/f.jsonl:1: member \"rank\" is 4: not a rank below nranks"},
      {edited(1, "\"rank\":1", "\"rank\":-1"), "d/f.jsonl:1: member \"rank\" is -1"},
      {edited(1, "\"nranks\":4", "\"nranks\":0"), "d/f.jsonl:1: member \"nranks\" is 0"},
      {edited(1, "\"nranks\":4", "\"nranks\":2000000"), "d/f.jsonl:1: member \"nranks\" is 2000000"},
      {edited(1, "\"entries\":8", "\"entries\":-8"), "d/f.jsonl:1: member \"entries\" is -8: negative"},
      {edited(1, "}", "} x"), "d/f.jsonl:1: column "},
      {edited(3, "\"type\":\"call\"", "\"type\":\"header\""), "d/f.jsonl:3: a second header"},
      {edited(3, "\"type\":\"call\"", "\"type\":\"note\""),
       "d/f.jsonl:3: type \"note\" is not one this reader knows (header, call)"},
      {edited(2, "\"op\":\"allreduce\"", "\"op\":\"alltoall\""),
       "d/f.jsonl:2: member \"op\" is \"alltoall\", not one of allreduce, allgather, broadcast, reducescatter, reduce, "
       "send, recv"},
      {edited(6, "\"state\":\"started\"", "\"state\":\"stuck\""), "d/f.jsonl:6: member \"state\" is \"stuck\", not one of"},
      {edited(4, "\"wait_what\":\"\",", ""), "d/f.jsonl:4: member \"wait_what\" is missing"},
      {edited(4, "\"error\":\"\"", "\"error\":null"), "d/f.jsonl:4: member \"error\" must be a string, not null"},
      {edited(3, "\"seq\":3", "\"seq\":2"), "d/f.jsonl:3: seq 2 after seq 2: the ring holds calls oldest first"},
      {edited(2, "\"seq\":2", "\"seq\":-2"), "d/f.jsonl:2: member \"seq\" is -2: negative"},
      {edited(5, "\"coll_seq\":2", "\"coll_seq\":1"), "d/f.jsonl:5: coll_seq 1 after coll_seq 1: collectives are numbered"},
      {edited(6, "\"p2p_seq\":1", "\"p2p_seq\":0"), "d/f.jsonl:6: p2p_seq 0 after p2p_seq 0 for send to rank 2"},
      {edited(2, "\"p2p_seq\":-1", "\"p2p_seq\":0"), "d/f.jsonl:2: member \"p2p_seq\" is 0: collectives have -1"},
      {edited(2, "\"coll_seq\":1", "\"coll_seq\":-1"), "d/f.jsonl:2: member \"coll_seq\" is -1: collectives number from 0"},
      {edited(3, "\"coll_seq\":-1", "\"coll_seq\":3"), "d/f.jsonl:3: member \"coll_seq\" is 3: send/recv have -1"},
      {edited(3, "\"p2p_seq\":0", "\"p2p_seq\":-1"), "d/f.jsonl:3: member \"p2p_seq\" is -1: send/recv number from 0"},
      {edited(3, "\"root\":2", "\"root\":4"), "d/f.jsonl:3: member \"root\" is 4: the peer of a send/recv"},
      {edited(2, "\"root\":-1", "\"root\":0"), "d/f.jsonl:2: member \"root\" is 0: only broadcast, reduce, send and recv"},
      {edited(5, "\"root\":1", "\"root\":-1"), "d/f.jsonl:5: member \"root\" is -1: the root is a rank below nranks"},
      {edited(6, "\"wait_peer\":2", "\"wait_peer\":4"), "d/f.jsonl:6: member \"wait_peer\" is 4"},
      {edited(2, "\"count\":1024", "\"count\":-1"), "d/f.jsonl:2: member \"count\" is -1: negative"},
      {edited(2, "\"channels\":2", "\"channels\":4294967296"), "d/f.jsonl:2: member \"channels\" is 4294967296"},
      {edited(2, "\"t_end_ns\":3002", "\"t_end_ns\":-1"), "d/f.jsonl:2: member \"t_end_ns\" is -1: negative"},
      {edited(1, "\"entries\":8", "\"entries\":4"), "d/f.jsonl:6: more calls than the ring holds (\"entries\" is 4)"},
      {edited(1, "\"recorded\":7", "\"recorded\":6"), "d/f.jsonl:6: seq 6, but the header says 6 calls were recorded"},
      {join({lines[0], lines[1], "", lines[2]}), "d/f.jsonl:3: column 1: empty line"},
      {edited(4, "\"dtype\":\"float32\"", "\"dtype\":\"float32"), "d/f.jsonl:4: column "},
      {join({lines[0], lines[1], std::string(kFrMaxLineBytes + 1, ' ')}), "d/f.jsonl:3: line of 1048577 bytes"},
  };
  for (const Bad& b : bad) {
    INFO(b.text.substr(0, 2000));
    const std::string msg = refused(b.text);
    CHECK_THAT(msg, Catch::StartsWith("d/f.jsonl:"));
    CHECK_THAT(msg, Catch::Contains(b.message));
  }
}
