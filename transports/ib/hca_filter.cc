#include "ib/hca_filter.h"

#include <algorithm>

namespace coll::ib {
namespace {

Status bad(std::string_view text, std::string_view entry, std::string_view why) {
  return makeError(collInvalidArgument,
                   "COLL_IB_HCA='{}': entry '{}' {} (grammar: [^][=]name[:port],... e.g. mlx5_0:1,mlx5_1 or ^=mlx5_2)",
                   text, entry, why);
}

}  // namespace

Result<HcaFilter> parseHcaFilter(std::string_view text) {
  HcaFilter f;
  if (text.empty()) return f;
  std::string_view rest = text;
  if (rest.front() == '^') {
    f.exclude = true;
    rest.remove_prefix(1);
  }
  if (!rest.empty() && rest.front() == '=') {
    f.exact = true;
    rest.remove_prefix(1);
  }
  // Split on every comma, so an empty entry (",,", a trailing comma, or
  // nothing after ^ / =) is seen and refused.
  while (true) {
    const size_t comma = rest.find(',');
    const std::string_view entry = rest.substr(0, comma);
    const size_t colon = entry.find(':');
    HcaEntry e;
    e.name = std::string(entry.substr(0, colon));
    if (e.name.empty()) return bad(text, entry, "has no device name");
    if (e.name.find_first_of(" \t\n=^") != std::string::npos)
      return bad(text, entry, "has white space, '=' or '^' in its name ('^' and '=' go once, at the front)");
    if (colon != std::string_view::npos) {
      const std::string_view port = entry.substr(colon + 1);
      if (port.empty() || port.size() > 3 || port.find_first_not_of("0123456789") != std::string_view::npos)
        return bad(text, entry, "has a port that is not a number");
      e.port = std::stoi(std::string(port));
      if (e.port < 1 || e.port > 255) return bad(text, entry, "has a port outside 1..255");
    }
    f.entries.push_back(std::move(e));
    if (comma == std::string_view::npos) break;
    rest.remove_prefix(comma + 1);
  }
  return f;
}

bool hcaEntryMatches(const HcaEntry& e, bool exact, const PortRef& p) {
  const bool nameOk = exact ? p.device == e.name : p.device.compare(0, e.name.size(), e.name) == 0;
  return nameOk && (e.port == -1 || e.port == p.port);
}

std::vector<PortRef> selectPorts(const HcaFilter& f, const std::vector<PortRef>& available) {
  std::vector<PortRef> out;
  for (const PortRef& p : available) {
    const bool listed = std::any_of(f.entries.begin(), f.entries.end(),
                                    [&](const HcaEntry& e) { return hcaEntryMatches(e, f.exact, p); });
    // No entries: every port (the variable unset).
    if (f.entries.empty() || listed != f.exclude) out.push_back(p);
  }
  return out;
}

}  // namespace coll::ib
