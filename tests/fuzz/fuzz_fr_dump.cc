// fuzz_fr_dump — the flight recorder dump reader (tools/trace/fr_dump.h,
// json_line.h) and the analysis colltrace runs on what it accepts
// (fr_analyze.h, fr_render.h).  Dumps come from the user's disk, written
// by a process that may have died mid-write.
//
// Input: [mode][text].  mode % 3 == 0: text is a whole dump file; 1: text
// follows a fixed valid header (so call lines fit the runner's -max_len);
// 2: text is one JSON line for parseJsonLine.
// Properties:
//   - a refused dump is collInvalidArgument, "fuzz.jsonl:LINE: ..." with
//     LINE a line of the input; a refused JSON line says "column N: " with N
//     within the line (or one past its end);
//   - an accepted dump keeps the format's rules (rank < nranks, no more calls
//     than entries, seq consecutive and below recorded, -1 where the format
//     says), formatDump of it parses back to the same structs, and
//     formatting is then stable;
//   - an accepted JSON line's members, written again (strings and integers
//     exactly, other kinds as one value of that kind), read back the same;
//   - the analysis of the dump, alone and beside a copy posing as another
//     rank, ends its report with its verdict.
#include <string>
#include <vector>

#include "fuzz_common.h"
#include "tools/trace/fr_analyze.h"
#include "tools/trace/fr_dump.h"
#include "tools/trace/fr_render.h"
#include "tools/trace/json_line.h"

using namespace coll::trace;

namespace {

FrDump seedDump(int calls) {
  FrDump d;
  d.header.comm = "3f2a9c0d11e5b7a4";
  d.header.rank = 1;
  d.header.nranks = 4;
  d.header.host = "n\xC3\xA9";
  d.header.pid = 7;
  d.header.reason = "timeout";
  d.header.message = "t\n\"x\"";
  d.header.entries = 8;
  d.header.recorded = 9;
  for (int i = 0; i < calls; ++i) {
    FrCall c;
    c.seq = 9 - calls + i;
    c.collSeq = i == 1 ? -1 : 40 + i;
    c.p2pSeq = i == 1 ? 0 : -1;
    c.op = i == 1 ? FrOp::Send : FrOp::AllReduce;
    c.root = i == 1 ? 2 : -1;
    c.dtype = "f";
    c.state = i + 1 == calls ? FrState::Started : FrState::Completed;
    c.waitPeer = i + 1 == calls ? 0 : -1;
    d.calls.push_back(c);
  }
  return d;
}

// The header mode 1 puts before the fuzzer's text: room for any seq.
const std::string& fixedHeader() {
  static const std::string h = [] {
    FrDump d = seedDump(0);
    d.header.entries = 1000;
    d.header.recorded = int64_t{1} << 40;
    return formatDump(d);
  }();
  return h;
}

size_t lineCount(const std::string& text) {
  size_t n = 1;
  for (size_t i = 0; i + 1 < text.size(); ++i) n += text[i] == '\n';
  return n;
}

void checkRules(const FrDump& d) {
  const FrHeader& h = d.header;
  FUZZ_CHECK(h.version == kFrVersion && h.comm.size() == 16);
  FUZZ_CHECK(h.nranks >= 1 && h.rank >= 0 && h.rank < h.nranks);
  FUZZ_CHECK(static_cast<int64_t>(d.calls.size()) <= h.entries);
  for (size_t i = 0; i < d.calls.size(); ++i) {
    const FrCall& c = d.calls[i];
    FUZZ_CHECK(c.seq >= 0 && c.seq < h.recorded);
    if (i > 0) FUZZ_CHECK(c.seq == d.calls[i - 1].seq + 1);
    FUZZ_CHECK(isP2p(c.op) ? c.collSeq == -1 && c.p2pSeq >= 0 : c.collSeq >= 0 && c.p2pSeq == -1);
    FUZZ_CHECK(c.waitPeer >= -1 && c.waitPeer < h.nranks);
    FUZZ_CHECK(c.root >= -1 && c.root < h.nranks);
  }
}

void checkAnalysis(const FrDump& d) {
  CommDumps comm;
  comm.comm = d.header.comm;
  comm.dumps.push_back(d);
  if (d.header.nranks > 1) {
    FrDump other = d;
    other.header.rank = (d.header.rank + 1) % d.header.nranks;
    comm.dumps.push_back(other);
    if (comm.dumps[1].header.rank < comm.dumps[0].header.rank) std::swap(comm.dumps[0], comm.dumps[1]);
  }
  const CommReport r = analyzeComm(comm);
  FUZZ_CHECK(!r.verdict.empty());
  const std::string text = renderReport(r);
  FUZZ_CHECK(text.size() > r.verdict.size() &&
             text.compare(text.size() - r.verdict.size() - 1, std::string::npos, r.verdict + "\n") == 0);
}

void checkDump(const std::string& text) {
  auto r = parseDump("fuzz.jsonl", text);
  if (!r.isOk()) {
    FUZZ_CHECK(r.status().code() == collInvalidArgument);
    const std::string& m = r.status().message();
    FUZZ_CHECK(m.rfind("fuzz.jsonl:", 0) == 0);
    const size_t line = std::strtoull(m.c_str() + 11, nullptr, 10);
    FUZZ_CHECK(line >= 1 && line <= lineCount(text));
    return;
  }
  const FrDump& d = r.value();
  checkRules(d);
  const std::string again = formatDump(d);
  auto back = parseDump("again.jsonl", again);
  FUZZ_CHECK(back.isOk());
  FUZZ_CHECK(back.value() == d);
  FUZZ_CHECK(formatDump(back.value()) == again);
  checkAnalysis(d);
}

std::string rewrite(const std::vector<JsonMember>& members) {
  std::string out = "{";
  for (const JsonMember& m : members) {
    out += (out.size() > 1 ? "," : "") + jsonQuote(m.key) + ":";
    switch (m.kind) {
      case JsonKind::String: out += jsonQuote(m.text); break;
      case JsonKind::Int: out += std::to_string(m.integer); break;
      case JsonKind::Number: out += "1.5"; break;
      case JsonKind::Bool: out += "true"; break;
      case JsonKind::Null: out += "null"; break;
      case JsonKind::Object: out += "{\"a\":[]}"; break;
      case JsonKind::Array: out += "[{}]"; break;
    }
  }
  return out + "}";
}

void checkJsonLine(const std::string& line) {
  auto r = parseJsonLine(line);
  if (!r.isOk()) {
    const std::string& m = r.status().message();
    FUZZ_CHECK(m.rfind("column ", 0) == 0);
    const size_t col = std::strtoull(m.c_str() + 7, nullptr, 10);
    FUZZ_CHECK(col >= 1 && col <= line.size() + 1);
    return;
  }
  auto back = parseJsonLine(rewrite(r.value()));
  FUZZ_CHECK(back.isOk());
  FUZZ_CHECK(back.value().size() == r.value().size());
  for (size_t i = 0; i < r.value().size(); ++i) {
    const JsonMember& a = r.value()[i];
    const JsonMember& b = back.value()[i];
    FUZZ_CHECK(a.key == b.key && a.kind == b.kind && a.text == b.text && a.integer == b.integer);
  }
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  std::vector<fuzz::Bytes> seeds;
  const auto add = [&](char mode, const std::string& text) {
    fuzz::Bytes b{static_cast<uint8_t>(mode)};
    fuzz::append(b, text);
    seeds.push_back(b);
  };
  add(0, formatDump(seedDump(0)));
  add(0, formatDump(seedDump(1)).substr(0, 500));
  const std::string calls = formatDump(seedDump(2));
  const size_t firstCall = calls.find('\n') + 1;
  add(1, calls.substr(firstCall, calls.find('\n', firstCall) + 1 - firstCall));
  add(1, calls.substr(calls.find('\n', firstCall) + 1));
  add(2, R"({"s":"\u00e9\ud83d\ude00\n","i":-9223372036854775808,"o":{"a":[1,{"b":null}],"t":true},"f":1e-3})");
  add(2, "{\"a\":\"\xC3\xA9\",\"b\":[[[[]]]]}");
  fuzz::maybeWriteSeeds(seeds);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const std::string text(reinterpret_cast<const char*>(data) + 1, size - 1);
  switch (data[0] % 3) {
    case 0: checkDump(text); break;
    case 1: checkDump(fixedHeader() + text); break;
    default: checkJsonLine(text); break;
  }
  return 0;
}
