// log.h — logging through spdlog.
//
// COLL_DEBUG=WARN|INFO|TRACE sets the level (default WARN).
// COLL_DEBUG_SUBSYS=INIT,TUNE,... keeps only those subsystems; a leading ^
// excludes instead ("^TUNE").  Each line: time host:pid:rank LEVEL SUBSYS msg.
#pragma once

#include <cstdint>
#include <string_view>

#include <fmt/format.h>

namespace coll::log {

enum class Level { Trace = 0, Info = 1, Warn = 2, Error = 3, Off = 4 };

enum Subsys : unsigned {
  kInit = 1u << 0,      // INIT: communicator setup
  kBoot = 1u << 1,      // BOOT: bootstrap, unique id, rendezvous
  kTune = 1u << 2,      // TUNE: algorithm choices
  kColl = 1u << 3,      // COLL: collective calls
  kShm = 1u << 4,       // SHM: shared-memory transport
  kExec = 1u << 5,      // EXEC: executor steps
  kNet = 1u << 6,       // NET: socket transport, interfaces
  kAll = ~0u,
};

// Who logs, where no rank applies: printed as "-" and "root".
constexpr int kNoRank = -1;        // no rank known yet
constexpr int kRootLogRank = -2;   // the rendezvous root's thread (bootstrap/root.h)

bool enabled(Level level, Subsys subsys);
void write(Level level, Subsys subsys, int rank, std::string_view message);

// One kind of repeated warning: the first `burst` are written, then at most
// one per `periodMs`, which says how many were held back (300 strangers
// must not write 300 lines).  Not thread-safe: one owner.
class Throttle {
 public:
  Throttle(int burst, int64_t periodMs) : burst_(burst), periodMs_(periodMs) {}
  // Whether to write this one; *held = how many were held back before it.
  bool admit(uint64_t* held);
  // Held back since the last one written.
  uint64_t held() const { return held_; }

 private:
  int burst_;
  int64_t periodMs_;
  int written_ = 0;
  int64_t lastNs_ = 0;
  uint64_t held_ = 0;
};

}  // namespace coll::log

// rank: the logging rank, or log::kNoRank / log::kRootLogRank.
#define COLL_LOG(level, subsys, rank, ...)                                              \
  do {                                                                                  \
    if (::coll::log::enabled(::coll::log::Level::level, ::coll::log::subsys))           \
      ::coll::log::write(::coll::log::Level::level, ::coll::log::subsys, (rank),         \
                         ::fmt::format(__VA_ARGS__));                                    \
  } while (0)
