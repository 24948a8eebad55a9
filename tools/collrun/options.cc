#include "options.h"

#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <string_view>

#include "env.h"

namespace collrun {
namespace {

bool parse_int(const std::string& s, long& out) {
  if (s.empty()) return false;
  char* end = nullptr;
  errno = 0;
  long v = std::strtol(s.c_str(), &end, 10);
  if (errno != 0 || end == s.c_str() || *end != '\0') return false;
  out = v;
  return true;
}

bool parse_seconds(const std::string& s, double& out) {
  if (s.empty()) return false;
  char* end = nullptr;
  errno = 0;
  double v = std::strtod(s.c_str(), &end);
  if (errno != 0 || end == s.c_str() || *end != '\0' || !std::isfinite(v) ||
      v < 0 || v > 1e8)
    return false;
  out = v;
  return true;
}

bool valid_env_name(std::string_view name) {
  if (name.empty()) return false;
  for (size_t i = 0; i < name.size(); ++i) {
    char c = name[i];
    bool alpha = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
    bool digit = c >= '0' && c <= '9';
    if (!(alpha || (i > 0 && digit))) return false;
  }
  return true;
}

ParseResult error(std::string msg) {
  ParseResult r;
  r.kind = ParseResult::kError;
  r.error = std::move(msg);
  return r;
}

}  // namespace

std::string usage_text() {
  return
      "Usage: collrun -n N [options] [--] PROG [ARGS...]\n"
      "\n"
      "Starts N local ranks of PROG (looked up in PATH) and supervises them.\n"
      "Each rank gets COLL_RANK, COLL_NRANKS, COLL_LOCAL_RANK,\n"
      "COLL_LOCAL_NRANKS, COLL_ROOT=127.0.0.1:PORT (a free port) and a fresh\n"
      "random COLL_SECRET; values already in the environment are replaced.\n"
      "\n"
      "Options:\n"
      "  -n, --nranks N       number of ranks, 1..1024 (required)\n"
      "  -x VAR=VALUE         set VAR in every rank's environment (repeatable)\n"
      "  --timeout SECONDS    kill the job after this wall-clock time, exit 124\n"
      "  --grace SECONDS      delay between SIGTERM and SIGKILL when stopping\n"
      "                       the remaining ranks (default 3)\n"
      "  --no-prefix          do not prefix output lines with \"[rank] \"\n"
      "  --bind core|share|none  bind each rank to one core of collrun's CPUs\n"
      "                       (default core): rank r on core r while ranks\n"
      "                       fit, else consecutive ranks share a core;\n"
      "                       share: to its share of the cores, consecutive\n"
      "                       ones (room for a rank's helper threads, e.g.\n"
      "                       the host-staged device path's proxy)\n"
      "  --report-bindings    print each rank's core on stderr\n"
      "  --settings           print every COLL_* setting in force (with the -x\n"
      "                       values) and where it comes from, and exit;\n"
      "                       --settings=markdown prints docs/CONFIG.md's table\n"
      "  -h, --help           print this help and exit\n"
      "\n"
      "Rank 0 reads collrun's stdin; the other ranks get /dev/null.\n"
      "SIGINT, SIGTERM, SIGHUP and SIGQUIT are forwarded to all ranks.\n"
      "\n"
      "Exit status: 0 when all ranks exit 0; else the first failing rank's\n"
      "exit status, or 128+N if it was killed by signal N; 124 on --timeout;\n"
      "127 when PROG cannot be executed; 2 on usage errors; 125 when collrun\n"
      "itself fails.\n";
}

ParseResult parse_options(int argc, const char* const* argv) {
  ParseResult r;
  Options& o = r.options;
  bool have_n = false;
  int i = 1;

  // Fetches the value of an option: "--opt=V", "-oV" (short, attached) or the
  // next argument.
  auto take_value = [&](std::string_view arg, std::string_view name,
                        std::string& value) -> bool {
    if (arg.size() > name.size()) {  // attached form
      std::string_view rest = arg.substr(name.size());
      if (rest.front() == '=') rest.remove_prefix(1);
      value.assign(rest);
      return true;
    }
    if (i + 1 >= argc) return false;
    value = argv[++i];
    return true;
  };
  auto matches = [](std::string_view arg, std::string_view name, bool is_short) {
    if (arg == name) return true;
    if (arg.substr(0, name.size()) != name) return false;
    return is_short || arg[name.size()] == '=';
  };

  for (; i < argc; ++i) {
    std::string_view arg = argv[i];
    std::string value;
    if (arg == "--") {
      ++i;
      break;
    }
    if (arg.empty() || arg[0] != '-' || arg == "-") break;  // PROG
    if (arg == "-h" || arg == "--help") {
      r.kind = ParseResult::kHelp;
      return r;
    } else if (arg == "--settings") {
      r.kind = ParseResult::kSettings;
    } else if (arg == "--settings=markdown") {
      r.kind = ParseResult::kSettingsMarkdown;
    } else if (arg == "--no-prefix") {
      o.prefix = false;
    } else if (arg == "--report-bindings") {
      o.report_bindings = true;
    } else if (matches(arg, "--bind", false)) {
      if (!take_value(arg, "--bind", value)) return error("option --bind needs a value (core, share or none)");
      if (value == "core") o.bind = Options::Bind::kCore;
      else if (value == "share") o.bind = Options::Bind::kShare;
      else if (value == "none") o.bind = Options::Bind::kNone;
      else return error("invalid --bind '" + value + "' (core, share or none)");
    } else if (matches(arg, "-n", true) || matches(arg, "--nranks", false)) {
      std::string_view name = arg.substr(0, 2) == "--" ? "--nranks" : "-n";
      if (!take_value(arg, name, value)) return error("option -n needs a value");
      long n = 0;
      if (!parse_int(value, n) || n < 1 || n > kMaxRanks)
        return error("invalid number of ranks '" + value + "' (must be 1.." +
                     std::to_string(kMaxRanks) + ")");
      o.nranks = static_cast<int>(n);
      have_n = true;
    } else if (matches(arg, "--timeout", false)) {
      if (!take_value(arg, "--timeout", value))
        return error("option --timeout needs a value");
      if (!parse_seconds(value, o.timeout_s) || o.timeout_s <= 0)
        return error("invalid --timeout '" + value + "' (seconds, > 0)");
    } else if (matches(arg, "--grace", false)) {
      if (!take_value(arg, "--grace", value))
        return error("option --grace needs a value");
      if (!parse_seconds(value, o.grace_s))
        return error("invalid --grace '" + value + "' (seconds, >= 0)");
    } else if (matches(arg, "-x", true)) {
      if (!take_value(arg, "-x", value)) return error("option -x needs VAR=VALUE");
      size_t eq = value.find('=');
      if (eq == std::string::npos)
        return error("option -x needs VAR=VALUE, got '" + value + "'");
      std::string name = value.substr(0, eq);
      if (!valid_env_name(name))
        return error("invalid variable name '" + name + "' in -x");
      if (is_launcher_variable(name))
        return error("-x cannot set " + name + " (collrun sets it)");
      o.extra_env.emplace_back(name, value.substr(eq + 1));
    } else {
      return error("unknown option '" + std::string(arg) + "'");
    }
  }

  if (r.kind == ParseResult::kSettings || r.kind == ParseResult::kSettingsMarkdown) return r;  // no -n, no PROG
  if (!have_n) return error("missing required option -n N");
  if (i >= argc) return error("missing program to run");
  for (; i < argc; ++i) o.command.emplace_back(argv[i]);
  r.kind = ParseResult::kRun;
  return r;
}

}  // namespace collrun
