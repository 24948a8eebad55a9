// Command-line parsing for collrun.
#pragma once

#include <string>
#include <utility>
#include <vector>

namespace collrun {

inline constexpr int kMaxRanks = 1024;

struct Options {
  int nranks = 0;                 // -n, required, 1..kMaxRanks
  double grace_s = 3.0;           // --grace: SIGTERM -> SIGKILL delay
  double timeout_s = 0.0;         // --timeout: whole-job limit, 0 = none
  bool prefix = true;             // --no-prefix clears it
  // --bind: one core per rank (default), each rank its share of the cores, or none.
  enum class Bind { kCore, kShare, kNone } bind = Bind::kCore;
  bool report_bindings = false;   // --report-bindings
  std::vector<std::pair<std::string, std::string>> extra_env;  // -x VAR=VALUE
  std::vector<std::string> command;  // PROG ARGS...
};

struct ParseResult {
  // kSettings: print the COLL_* settings in force (with the -x values) and
  // exit; kSettingsMarkdown: the settings table as docs/CONFIG.md holds it.
  enum Kind { kRun, kHelp, kSettings, kSettingsMarkdown, kError } kind = kError;
  Options options;
  std::string error;  // for kError
};

ParseResult parse_options(int argc, const char* const* argv);

// The text printed by -h/--help.
std::string usage_text();

}  // namespace collrun
