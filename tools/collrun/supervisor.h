// Runs a whole job: starts the ranks, relays and prefixes their output,
// forwards signals, stops the job when a rank fails or on --timeout, and
// works out collrun's exit status.
#pragma once

#include <string>
#include <vector>

#include "options.h"

namespace collrun {

// Exit statuses of collrun itself (besides the ranks' own).
inline constexpr int kExitUsage = 2;
inline constexpr int kExitTimeout = 124;
inline constexpr int kExitInternal = 125;
inline constexpr int kExitCannotExec = 127;

// common_env: see env.h.  The rendezvous port is picked right before the
// ranks start.  Returns collrun's exit status.
int run_job(const Options& opts, const std::vector<std::string>& common_env,
            const std::string& secret);

}  // namespace collrun
