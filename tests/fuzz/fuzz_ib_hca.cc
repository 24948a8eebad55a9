// fuzz_ib_hca — ib::parseHcaFilter and ib::selectPorts: COLL_IB_HCA, in
// NCCL_IB_HCA's grammar (transports/ib/hca_filter.h).
//
// Input: the text.
// Properties:
//   - accepted iff an independent model accepts: optional '^', optional
//     '=', then comma-separated entries, each a non-empty name without
//     white space, '=', '^' or ':' and an optional ':' port of 1-3 digits
//     whose value is 1..255; the parse gives the model's flags and entries;
//   - a refusal is collInvalidArgument and names COLL_IB_HCA and the text;
//   - parse(encode(parse(x))) == parse(x);
//   - over ports made from the entries' names, a filter and the same filter
//     with ^ flipped select complementary sets (an empty filter: all).
#include <algorithm>
#include <string>
#include <vector>

#include "fuzz_common.h"
#include "ib/hca_filter.h"

using namespace coll::ib;

namespace {

struct Model {
  bool ok = true, exclude = false, exact = false;
  std::vector<HcaEntry> entries;
};

Model refused() {
  Model m;
  m.ok = false;
  return m;
}

Model model(const std::string& text) {
  Model m;
  if (text.empty()) return m;
  size_t i = 0;
  if (text[i] == '^') {
    m.exclude = true;
    ++i;
  }
  if (i < text.size() && text[i] == '=') {
    m.exact = true;
    ++i;
  }
  std::string rest = text.substr(i);
  size_t start = 0;
  while (true) {
    size_t comma = rest.find(',', start);
    std::string entry = rest.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    HcaEntry e;
    size_t colon = entry.find(':');
    e.name = entry.substr(0, colon);
    bool nameOk = !e.name.empty() && std::none_of(e.name.begin(), e.name.end(), [](char c) {
      return c == ' ' || c == '\t' || c == '\n' || c == '=' || c == '^';
    });
    if (!nameOk) return refused();
    if (colon != std::string::npos) {
      std::string port = entry.substr(colon + 1);
      if (port.empty() || port.size() > 3 || !std::all_of(port.begin(), port.end(), [](char c) { return c >= '0' && c <= '9'; }))
        return refused();
      e.port = std::stoi(port);
      if (e.port < 1 || e.port > 255) return refused();
    }
    m.entries.push_back(e);
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return m;
}

bool same(const HcaFilter& a, const HcaFilter& b) {
  if (a.exclude != b.exclude || a.exact != b.exact || a.entries.size() != b.entries.size()) return false;
  for (size_t i = 0; i < a.entries.size(); ++i)
    if (a.entries[i].name != b.entries[i].name || a.entries[i].port != b.entries[i].port) return false;
  return true;
}

std::string encode(const HcaFilter& f) {
  std::string out = std::string(f.exclude ? "^" : "") + (f.exact ? "=" : "");
  for (size_t i = 0; i < f.entries.size(); ++i) {
    out += (i ? "," : "") + f.entries[i].name;
    if (f.entries[i].port != -1) out += ":" + std::to_string(f.entries[i].port);
  }
  return out;
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  std::vector<fuzz::Bytes> seeds;
  for (const char* t : {"mlx5", "mlx5_0:1,mlx5_1:1", "=mlx5_0:1", "^mlx5_2", "^=mlx5_0,bnxt_re:2", "", "^", "a,,b",
                        "mlx5_0:256", "mlx5_0:x", ":1"})
    seeds.emplace_back(t, t + strlen(t));
  fuzz::maybeWriteSeeds(seeds);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  const Model m = model(text);
  auto r = parseHcaFilter(text);
  FUZZ_CHECK(r.isOk() == m.ok);
  if (!r.isOk()) {
    FUZZ_CHECK(r.status().code() == collInvalidArgument);
    FUZZ_CHECK(r.status().message().rfind("COLL_IB_HCA='" + text + "'", 0) == 0);
    return 0;
  }
  const HcaFilter& f = r.value();
  FUZZ_CHECK(f.exclude == m.exclude && f.exact == m.exact);
  FUZZ_CHECK(same(f, HcaFilter{m.exclude, m.exact, m.entries}));
  auto again = parseHcaFilter(encode(f));
  FUZZ_CHECK(again.isOk() && same(again.value(), f));

  // Ports named after the entries, their prefixes and extensions.
  std::vector<PortRef> ports;
  for (const HcaEntry& e : f.entries)
    for (int port : {1, 2, e.port == -1 ? 3 : e.port}) {
      ports.push_back({e.name, port});
      ports.push_back({e.name + "x", port});
      ports.push_back({e.name.substr(0, e.name.size() / 2), port});
    }
  HcaFilter flipped = f;
  flipped.exclude = !f.exclude;
  const auto a = selectPorts(f, ports);
  const auto b = selectPorts(flipped, ports);
  if (f.entries.empty()) {
    FUZZ_CHECK(a.size() == ports.size());
  } else {
    FUZZ_CHECK(a.size() + b.size() == ports.size());
    for (const PortRef& p : a) FUZZ_CHECK(std::find(b.begin(), b.end(), p) == b.end());
    // An included port matches some entry; exact names match whole.
    for (const PortRef& p : f.exclude ? b : a)
      FUZZ_CHECK(std::any_of(f.entries.begin(), f.entries.end(), [&](const HcaEntry& e) {
        const bool name = f.exact ? p.device == e.name : p.device.rfind(e.name, 0) == 0;
        return name && (e.port == -1 || e.port == p.port);
      }));
  }
  return 0;
}
