// collrun: the local launcher of libcoll.
//
//   collrun -n N [options] [--] PROG ARGS...
//
// Starts N ranks of PROG on this machine with COLL_RANK, COLL_NRANKS,
// COLL_LOCAL_RANK, COLL_LOCAL_NRANKS, COLL_ROOT (127.0.0.1 and a free port,
// where rank 0 listens) and COLL_SECRET (fresh random per job).  These six
// are always set by collrun, replacing any value in its own environment.
// Output lines are prefixed with "[rank] "; the job is torn down when a rank
// fails.  See usage_text() in options.cc for flags and exit statuses.
#include <exception>
#include <unistd.h>

#include "env.h"
#include "coll/base/settings.h"
#include "io_util.h"
#include "options.h"
#include "supervisor.h"

extern char** environ;

int main(int argc, char** argv) {
  using namespace collrun;
  ensure_std_fds_open();

  ParseResult parsed = parse_options(argc, argv);
  if (parsed.kind == ParseResult::kHelp) {
    write_all(STDOUT_FILENO, usage_text());
    return 0;
  }
  if (parsed.kind == ParseResult::kSettingsMarkdown) {
    write_all(STDOUT_FILENO, coll::settings::markdownTable());
    return 0;
  }
  if (parsed.kind == ParseResult::kSettings) {
    for (const auto& [name, value] : parsed.options.extra_env) setenv(name.c_str(), value.c_str(), 1);
    write_all(STDOUT_FILENO, coll::settings::describeInForce());
    coll::Status bad = coll::settings::checkAll();
    if (!bad.isOk()) {
      report(bad.cause());
      return kExitUsage;
    }
    return 0;
  }
  if (parsed.kind == ParseResult::kError) {
    report(parsed.error);
    write_all(STDERR_FILENO, "Usage: collrun -n N [options] [--] PROG [ARGS...]\n"
                             "Try 'collrun --help' for more information.\n");
    return kExitUsage;
  }

  const Options& opts = parsed.options;
  std::string secret;
  try {
    secret = make_secret();
  } catch (const std::exception& e) {
    report(e.what());
    return kExitInternal;
  }
  std::vector<std::string> env = common_env(environ, opts.extra_env);
  return run_job(opts, env, secret);
}
