#include "coll/base/env.h"

#include <cerrno>
#include <cmath>
#include <cstdlib>

namespace coll::env {

std::optional<std::string> get(const char* name) {
  const char* v = std::getenv(name);
  if (v == nullptr || *v == '\0') return std::nullopt;
  return std::string(v);
}

long getInt(const char* name, long fallback) {
  auto v = get(name);
  if (!v) return fallback;
  char* end = nullptr;
  errno = 0;
  long x = std::strtol(v->c_str(), &end, 10);
  if (errno != 0 || end == v->c_str() || *end != '\0') return fallback;
  return x;
}

Result<long> parseInt(const char* name, const std::string& text, long min, long max) {
  char* end = nullptr;
  errno = 0;
  long x = std::strtol(text.c_str(), &end, 10);
  if (errno != 0 || end == text.c_str() || *end != '\0')
    return makeError(collInvalidArgument, "{}='{}' is not an integer", name, text);
  if (x < min || x > max)
    return makeError(collInvalidArgument, "{}={} is out of range [{}, {}]", name, x, min, max);
  return x;
}

Result<size_t> parseSize(const char* name, const std::string& text) {
  char* end = nullptr;
  errno = 0;
  unsigned long long x = std::strtoull(text.c_str(), &end, 10);
  if (errno != 0 || end == text.c_str() || text[0] == '-')
    return makeError(collInvalidArgument, "{}='{}' is not a size (e.g. 4096, 64K, 1M)", name, text);
  std::string suffix(end);
  unsigned shift = 0;
  if (suffix == "" || suffix == "B") shift = 0;
  else if (suffix == "K" || suffix == "k" || suffix == "KB" || suffix == "KiB") shift = 10;
  else if (suffix == "M" || suffix == "MB" || suffix == "MiB") shift = 20;
  else if (suffix == "G" || suffix == "GB" || suffix == "GiB") shift = 30;
  else
    return makeError(collInvalidArgument, "{}='{}': unknown size suffix '{}' (use K, M or G)", name, text, suffix);
  if (shift && x > (~0ULL >> shift))
    return makeError(collInvalidArgument, "{}='{}' overflows", name, text);
  return static_cast<size_t>(x << shift);
}

Result<long> parseDurationMs(const char* name, const std::string& text) {
  char* end = nullptr;
  errno = 0;
  double x = std::strtod(text.c_str(), &end);
  if (errno != 0 || end == text.c_str() || x < 0)
    return makeError(collInvalidArgument, "{}='{}' is not a duration (e.g. 30, 30s, 500ms)", name, text);
  std::string suffix(end);
  if (suffix == "" || suffix == "s") return static_cast<long>(x * 1000.0);
  if (suffix == "ms") return static_cast<long>(x);
  return makeError(collInvalidArgument, "{}='{}': unknown duration suffix '{}' (use s or ms)", name, text, suffix);
}

Result<double> parseRateBitsPerSec(const char* name, const std::string& text) {
  auto bad = [&] {
    return makeError(collInvalidArgument,
                     "{}='{}' is not a link rate (as tc writes them: 1gbit, 100mbit, 2.5gbit, 500kbit; bps = bytes/s)",
                     name, text);
  };
  char* end = nullptr;
  errno = 0;
  const double x = std::strtod(text.c_str(), &end);
  if (errno != 0 || end == text.c_str() || !(x > 0) || !std::isfinite(x)) return bad();
  std::string unit(end);
  for (char& ch : unit) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  double perUnit = 0;  // bits/s of one unit
  if (unit.empty() || unit == "bit") perUnit = 1;
  else if (unit == "bps") perUnit = 8;
  else {
    const size_t base = unit.size() >= 4 && unit.compare(unit.size() - 3, 3, "bit") == 0   ? unit.size() - 3
                        : unit.size() >= 4 && unit.compare(unit.size() - 3, 3, "bps") == 0 ? unit.size() - 3
                                                                                             : std::string::npos;
    if (base == std::string::npos || base > 2) return bad();
    const std::string prefix = unit.substr(0, base);
    const bool iec = prefix.size() == 2;
    if (iec && prefix[1] != 'i') return bad();
    const std::string powers = "kmgt";
    const size_t k = powers.find(prefix[0]);
    if (k == std::string::npos) return bad();
    perUnit = std::pow(iec ? 1024.0 : 1000.0, static_cast<double>(k + 1)) * (unit.compare(base, 3, "bps") == 0 ? 8 : 1);
  }
  return x * perUnit;
}

std::string trim(const std::string& s) {
  const size_t b = s.find_first_not_of(" \t\r");
  if (b == std::string::npos) return "";
  return s.substr(b, s.find_last_not_of(" \t\r") - b + 1);
}

}  // namespace coll::env
