#include "util/env.h"

#include <cerrno>
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

std::string trim(const std::string& s) {
  const size_t b = s.find_first_not_of(" \t\r");
  if (b == std::string::npos) return "";
  return s.substr(b, s.find_last_not_of(" \t\r") - b + 1);
}

}  // namespace coll::env
