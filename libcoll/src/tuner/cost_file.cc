// cost_file.cc — see cost_file.h for the format.
#include "tuner/cost_file.h"

#include <cerrno>
#include <cmath>
#include <cstring>
#include <cstdlib>
#include <fstream>
#include <set>
#include <sstream>

#include "coll/base/env.h"
#include "coll/base/settings.h"

namespace coll::tune {
namespace {

// A whole-string finite double; false on anything else.
bool parseDouble(const std::string& s, double* out) {
  if (s.empty()) return false;
  char* end = nullptr;
  errno = 0;
  double v = std::strtod(s.c_str(), &end);
  if (errno != 0 || end == s.c_str() || *end != '\0' || !std::isfinite(v)) return false;
  *out = v;
  return true;
}

Status lineError(const std::string& path, int line, const std::string& what) {
  return makeError(collInvalidArgument, "cost file {} line {}: {}", path, line, what);
}

}  // namespace

Result<CostFile> parseCostFile(const std::string& text, const std::string& path) {
  CostFile f;
  f.path = path;
  std::istringstream in(text);
  std::string raw;
  std::set<std::string> seen;
  int lineNo = 0;
  bool haveFormat = false, haveAlpha = false, haveBeta = false;
  while (std::getline(in, raw)) {
    ++lineNo;
    std::string line = env::trim(raw);
    if (line.empty() || line[0] == '#') continue;
    size_t sp = line.find_first_of(" \t");
    std::string key = line.substr(0, sp);
    std::string value = sp == std::string::npos ? "" : env::trim(line.substr(sp));
    if (value.empty()) return lineError(path, lineNo, fmt::format("'{}' has no value (expected 'key value')", key));
    if (!seen.insert(key).second) return lineError(path, lineNo, fmt::format("'{}' is given twice", key));
    if (!haveFormat && key != "format")
      return lineError(path, lineNo, fmt::format("expected 'format 1' first, found '{}'", key));
    if (key == "format") {
      if (value != "1")
        return lineError(path, lineNo, fmt::format("format '{}' is not supported (this libcoll reads format 1)", value));
      haveFormat = true;
    } else if (key == "transport") {
      if (value != "shm" && value != "socket" && value != "shm+socket")
        return lineError(path, lineNo, fmt::format("transport '{}' must be shm, socket or shm+socket", value));
      f.transport = value;
    } else if (key == "alpha") {
      if (!parseDouble(value, &f.cost.alpha) || f.cost.alpha < 0 || f.cost.alpha > 10.0)
        return lineError(path, lineNo, fmt::format("alpha '{}' must be a number of seconds in [0, 10]", value));
      haveAlpha = true;
    } else if (key == "beta") {
      if (!parseDouble(value, &f.cost.beta) || !(f.cost.beta > 0) || f.cost.beta > 1.0)
        return lineError(path, lineNo, fmt::format("beta '{}' must be seconds per byte, > 0 and <= 1", value));
      haveBeta = true;
    } else if (key == "nranks") {
      char* end = nullptr;
      errno = 0;
      long n = std::strtol(value.c_str(), &end, 10);
      if (errno != 0 || *end != '\0' || n < 1)
        return lineError(path, lineNo, fmt::format("nranks '{}' must be a positive integer", value));
      f.nranks = n;
    } else if (key == "host") {
      f.host = value;
    } else if (key == "date") {
      f.date = value;
    } else if (key == "method") {
      f.method = value;
    }
    // Other keys (fit_alpha, link_rate, ...) are informational.
  }
  if (!haveFormat) return makeError(collInvalidArgument, "cost file {}: empty (expected 'format 1', 'transport', 'alpha', 'beta')", path);
  if (f.transport.empty()) return makeError(collInvalidArgument, "cost file {}: no 'transport' line", path);
  if (!haveAlpha) return makeError(collInvalidArgument, "cost file {}: no 'alpha' line", path);
  if (!haveBeta) return makeError(collInvalidArgument, "cost file {}: no 'beta' line", path);
  return f;
}

Result<CostFile> loadCostFile(const std::string& path) {
  std::ifstream in(path);
  if (!in) return makeError(collInvalidArgument, "cost file {} (COLL_COST_FILE) cannot be read: {}", path, std::strerror(errno));
  std::stringstream ss;
  ss << in.rdbuf();
  return parseCostFile(ss.str(), path);
}

std::string CostSettings::digest() const {
  std::string d;
  if (haveFile) d += fmt::format("file:{}:{:a}:{:a}", file.transport, file.cost.alpha, file.cost.beta);
  if (haveAlpha) d += fmt::format("/alpha:{:a}", alpha);
  if (haveBeta) d += fmt::format("/beta:{:a}", beta);
  if (haveHandoff) d += fmt::format("/handoff:{:a}", handoff);
  return d;
}

Result<CostSettings> costSettingsFromEnv() {
  CostSettings s;
  if (auto v = settings::readText("COLL_COST_FILE")) {
    auto f = loadCostFile(*v);
    COLL_CHECK(f.status());
    s.file = f.take();
    s.haveFile = true;
  }
  auto seconds = [](const char* name, double* out, bool* have) -> Status {
    auto v = settings::readSeconds(name);
    COLL_CHECK(v.status());
    if (v.value()) *out = *v.value(), *have = true;
    return Status::ok();
  };
  COLL_CHECK(seconds("COLL_COST_ALPHA", &s.alpha, &s.haveAlpha));
  COLL_CHECK(seconds("COLL_COST_BETA", &s.beta, &s.haveBeta));
  COLL_CHECK(seconds("COLL_COST_HANDOFF", &s.handoff, &s.haveHandoff));
  return s;
}

ResolvedCost resolveCost(const CostSettings& s, const char* transportName, sched::LinkCost stated, std::string* note) {
  ResolvedCost r;
  r.cost = stated;
  r.source = fmt::format("transport default ({})", transportName);
  if (s.haveFile) {
    if (s.file.transport == transportName) {
      // The file fits alpha and beta; the per-message overhead stays the
      // transport's.
      r.cost.alpha = s.file.cost.alpha;
      r.cost.beta = s.file.cost.beta;
      r.source = fmt::format("file {} ({}{}{})", s.file.path, s.file.transport, s.file.date.empty() ? "" : ", ",
                             s.file.date);
    } else {
      // Said where the cost is shown (perf --model, collGetPlanInfo), not
      // only in an INFO log.
      r.source += fmt::format("; cost file {} is for transport '{}': ignored", s.file.path, s.file.transport);
      if (note != nullptr)
        *note = fmt::format("cost file {} is for transport '{}', this communicator uses '{}': ignored, using the "
                            "transport's stated cost",
                            s.file.path, s.file.transport, transportName);
    }
  }
  if (s.haveAlpha) r.cost.alpha = s.alpha;
  if (s.haveBeta) r.cost.beta = s.beta;
  if (s.haveAlpha || s.haveBeta) {
    r.source += " + env";
    if (s.haveAlpha) r.source += " COLL_COST_ALPHA";
    if (s.haveBeta) r.source += " COLL_COST_BETA";
  }
  return r;
}

}  // namespace coll::tune
