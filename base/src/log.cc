#include "coll/base/log.h"

#include <unistd.h>

#include <memory>
#include <mutex>
#include <string>

#include <spdlog/sinks/stdout_sinks.h>
#include <spdlog/spdlog.h>

#include "coll/base/clock.h"
#include "coll/base/settings.h"

namespace coll::log {
namespace {

struct Config {
  Level level = Level::Warn;
  unsigned mask = kAll;
  std::string host;
  std::shared_ptr<spdlog::logger> logger;
};

unsigned subsysBit(std::string_view name) {
  if (name == "INIT") return kInit;
  if (name == "BOOT") return kBoot;
  if (name == "TUNE") return kTune;
  if (name == "COLL") return kColl;
  if (name == "SHM") return kShm;
  if (name == "NET") return kNet;
  if (name == "EXEC") return kExec;
  if (name == "ALL") return kAll;
  return 0;
}

const char* subsysName(Subsys s) {
  switch (s) {
    case kInit: return "INIT";
    case kBoot: return "BOOT";
    case kTune: return "TUNE";
    case kColl: return "COLL";
    case kShm: return "SHM";
    case kNet: return "NET";
    case kExec: return "EXEC";
    default: return "ALL";
  }
}

Config makeConfig() {
  Config c;
  // Bad values are warned about here (the logger cannot fail) and fail init
  // where the table checks them (settings::checkAll).
  auto level = settings::readChoice("COLL_DEBUG");
  if (!level.isOk()) {
    fprintf(stderr, "libcoll: %s; using WARN\n", level.status().message().c_str());
  } else if (level.value()) {
    const std::string& s = *level.value();
    if (s == "TRACE") c.level = Level::Trace;
    else if (s == "INFO") c.level = Level::Info;
    else if (s == "WARN") c.level = Level::Warn;
    else if (s == "ERROR") c.level = Level::Error;
    else c.level = Level::Off;
  }
  if (auto v = settings::readText("COLL_DEBUG_SUBSYS")) {
    std::string_view s = *v;
    bool exclude = !s.empty() && s[0] == '^';
    if (exclude) s.remove_prefix(1);
    unsigned bits = 0;
    while (!s.empty()) {
      size_t comma = s.find(',');
      std::string name(s.substr(0, comma));
      for (auto& ch : name) ch = static_cast<char>(toupper(ch));
      unsigned b = subsysBit(name);
      if (b == 0)
        fprintf(stderr, "libcoll: COLL_DEBUG_SUBSYS: unknown subsystem '%s' (known: INIT BOOT TUNE COLL SHM NET EXEC ALL)\n",
                name.c_str());
      bits |= b;
      if (comma == std::string_view::npos) break;
      s.remove_prefix(comma + 1);
    }
    c.mask = exclude ? ~bits : bits;
  }
  char host[256] = {0};
  gethostname(host, sizeof(host) - 1);
  c.host = host;
  c.logger = std::make_shared<spdlog::logger>("coll", std::make_shared<spdlog::sinks::stderr_sink_mt>());
  c.logger->set_pattern("%H:%M:%S.%f %v");
  c.logger->set_level(spdlog::level::trace);
  return c;
}

Config& config() {
  static Config c = makeConfig();
  return c;
}

}  // namespace

bool enabled(Level level, Subsys subsys) {
  const Config& c = config();
  return level >= c.level && (c.mask & subsys) != 0;
}

void write(Level level, Subsys subsys, int rank, std::string_view message) {
  static const char* names[] = {"TRACE", "INFO", "WARN", "ERROR", "OFF"};
  static const spdlog::level::level_enum levels[] = {spdlog::level::trace, spdlog::level::info,
                                                     spdlog::level::warn, spdlog::level::err,
                                                     spdlog::level::off};
  Config& c = config();
  int li = static_cast<int>(level);
  const std::string who = rank >= 0 ? std::to_string(rank) : rank == kRootLogRank ? "root" : "-";
  c.logger->log(levels[li], "{}:{}:{} {} {} {}", c.host, getpid(), who, names[li], subsysName(subsys), message);
}

bool Throttle::admit(uint64_t* held) {
  const int64_t now = nowNs();
  if (written_ >= burst_ && now - lastNs_ < periodMs_ * 1000000) {
    ++held_;
    return false;
  }
  ++written_;
  lastNs_ = now;
  *held = held_;
  held_ = 0;
  return true;
}

}  // namespace coll::log
