// fr_dir.h — the flight recorder dumps of one directory: every file named
// coll_fr.<comm id>.r<rank>.jsonl read, parsed and grouped by communicator
// (a directory may hold several).  A file that cannot be read or parsed, or
// whose header disagrees with its name, is kept as an error for its rank, so
// the other ranks can still be analyzed.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "coll/base/status.h"
#include "fr_dump.h"

namespace coll::trace {

struct DumpFileName {
  std::string comm;
  int rank = 0;
};

// coll_fr.<16 hex digits>.r<rank>.jsonl (rank in decimal, no leading zero),
// or nothing.
std::optional<DumpFileName> parseDumpFileName(std::string_view name);

struct UnreadableDump {
  int rank = 0;
  std::string error;  // "PATH:LINE: what" or "PATH: why it cannot be read"
};

struct CommDumps {
  std::string comm;
  std::vector<FrDump> dumps;               // by rank
  std::vector<UnreadableDump> unreadable;  // by rank
};

struct DirDumps {
  std::vector<CommDumps> comms;      // by communicator id
  std::vector<std::string> ignored;  // coll_fr.* names that are not dump names
  bool anyUnreadable() const;
};

// Reads every dump in `dir`.  Fails (collSystemError) only when the
// directory cannot be listed.
Result<DirDumps> readDumpDir(const std::string& dir);

}  // namespace coll::trace
