// fr_render.h — a communicator's report as plain text, for a person at a
// terminal (docs/flight-recorder.md shows one): a line per rank, the first
// collective not completed with where each rank stands in it, mismatched
// arguments, send/recv not completed, and the verdict line last.
#pragma once

#include <string>

#include "fr_analyze.h"

namespace coll::trace {

// Long lists (mismatches, send/recv) are cut after this many lines.
inline constexpr size_t kRenderListLines = 20;

std::string renderReport(const CommReport& r);

}  // namespace coll::trace
