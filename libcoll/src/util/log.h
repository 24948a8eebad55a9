// log.h — logging through spdlog.
//
// COLL_DEBUG=WARN|INFO|TRACE sets the level (default WARN).
// COLL_DEBUG_SUBSYS=INIT,TUNE,... keeps only those subsystems; a leading ^
// excludes instead ("^TUNE").  Each line: time host:pid:rank LEVEL SUBSYS msg.
#pragma once

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

bool enabled(Level level, Subsys subsys);
void write(Level level, Subsys subsys, int rank, std::string_view message);

}  // namespace coll::log

// rank may be -1 when no rank is known yet.
#define COLL_LOG(level, subsys, rank, ...)                                              \
  do {                                                                                  \
    if (::coll::log::enabled(::coll::log::Level::level, ::coll::log::subsys))           \
      ::coll::log::write(::coll::log::Level::level, ::coll::log::subsys, (rank),         \
                         ::fmt::format(__VA_ARGS__));                                    \
  } while (0)
