// env.h — reading COLL_* environment variables with loud rejection of bad
// values (a typo must not silently fall back to a default).
#pragma once

#include <cstddef>
#include <optional>
#include <string>

#include "coll/base/status.h"

namespace coll::env {

std::optional<std::string> get(const char* name);
// For knobs where a bad value is only worth a warning (spin counts, ...).
long getInt(const char* name, long fallback);

// Strict parsers used by init: a malformed value is an error naming the
// variable and the value.
Result<long> parseInt(const char* name, const std::string& text, long min, long max);
// Sizes with optional K/M/G suffix (powers of 1024): "64K", "1M", "4096".
Result<size_t> parseSize(const char* name, const std::string& text);
// Durations: plain number = seconds; suffix ms or s: "500ms", "30s", "30".
Result<long> parseDurationMs(const char* name, const std::string& text);
// Link rates as tc (and tools/netsim) take them, in bits/s: "1gbit",
// "100mbit", "2.5gbit", "1gibit", "10mbps" (bps: bytes/s), "1e9" (bits/s).
Result<double> parseRateBitsPerSec(const char* name, const std::string& text);

// s without leading and trailing blanks (space, tab, CR): for values and
// lines read from the environment and from files.
std::string trim(const std::string& s);

}  // namespace coll::env
