#include "fr_words.h"

#include <algorithm>

#include <fmt/format.h>

namespace coll::trace {

std::string rankList(const std::vector<int>& ranks) {
  std::string out = ranks.size() == 1 ? "rank " : "ranks ";
  for (size_t i = 0; i < ranks.size();) {
    size_t j = i;
    while (j + 1 < ranks.size() && ranks[j + 1] == ranks[j] + 1) ++j;
    if (i > 0) out += ", ";
    if (j - i >= 2) {
      out += fmt::format("{}-{}", ranks[i], ranks[j]);
      i = j + 1;
    } else {
      out += std::to_string(ranks[i]);
      ++i;
    }
  }
  return out;
}

std::string ranksDo(const std::vector<int>& ranks, std::string_view one, std::string_view many) {
  return fmt::format("{} {}", rankList(ranks), ranks.size() == 1 ? one : many);
}

std::string collName(FrOp op, int64_t collSeq) { return fmt::format("{} coll_seq {}", frOpName(op), collSeq); }

std::string callName(const FrCall& c) {
  if (c.op == FrOp::Send) return fmt::format("send #{} to rank {}", c.p2pSeq, c.root);
  if (c.op == FrOp::Recv) return fmt::format("recv #{} from rank {}", c.p2pSeq, c.root);
  return collName(c.op, c.collSeq);
}

std::string callArgs(const FrCall& c) {
  std::string out = fmt::format("count {} {}", c.count, printable(c.dtype));
  if (!c.redop.empty()) out += " " + printable(c.redop);
  if (c.op == FrOp::Broadcast || c.op == FrOp::Reduce) out += fmt::format(" root {}", c.root);
  return out;
}

std::string mismatchText(const CollMismatch& m) {
  std::string out;
  for (const ArgDiff& d : m.diffs) {
    std::string values;
    for (const auto& [value, ranks] : d.values)
      values += fmt::format("{}{}: {}", values.empty() ? "" : "; ", rankList(ranks), printable(value));
    out += fmt::format("{}{} differs ({})", out.empty() ? "" : ", ", d.field, values);
  }
  return out;
}

std::string mismatchName(const CollMismatch& m) {
  const bool opDiffers = std::any_of(m.diffs.begin(), m.diffs.end(), [](const ArgDiff& d) { return d.field == "op"; });
  return opDiffers ? fmt::format("coll_seq {}", m.collSeq) : collName(m.op, m.collSeq);
}

std::string duration(int64_t ns) {
  if (ns >= 10'000'000'000) return fmt::format("{} s", ns / 1'000'000'000);
  if (ns >= 1'000'000'000) return fmt::format("{:.1f} s", static_cast<double>(ns) / 1e9);
  if (ns >= 1'000'000) return fmt::format("{} ms", ns / 1'000'000);
  return fmt::format("{} us", ns / 1'000);
}

std::string printable(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size(); ++i) {
    const auto c = static_cast<unsigned char>(s[i]);
    if (c < 0x20 || c == 0x7F) {
      out += fmt::format("\\u{:04x}", c);
    } else if (c == 0xC2 && i + 1 < s.size() && static_cast<unsigned char>(s[i + 1]) >= 0x80 &&
               static_cast<unsigned char>(s[i + 1]) <= 0x9F) {
      // U+0080..U+009F: C1 controls, which some terminals obey.
      out += fmt::format("\\u{:04x}", static_cast<unsigned char>(s[i + 1]));
      ++i;
    } else {
      out.push_back(static_cast<char>(c));
    }
  }
  return out;
}

}  // namespace coll::trace
