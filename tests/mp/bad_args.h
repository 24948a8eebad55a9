// bad_args.h — argument checks every rank can run on its own: each call
// must return collInvalidArgument without communicating, leave the output
// untouched and leave a last-error message that names the argument.
#pragma once

#include "common/colls.h"

#include <cstdint>
#include <string>
#include <vector>

// Appends one verdict per check (0 pass, 1 fail) to verdicts, and a line
// per failed check to messages.  Identical sequence of checks on every rank.
// verbose: rank 0 prints every check with the library's message.
void runBadArgChecks(const collperf::RankInfo& ri, std::vector<uint8_t>* verdicts,
                     std::vector<std::string>* messages, bool verbose);
