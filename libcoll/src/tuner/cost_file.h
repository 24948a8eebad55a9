// cost_file.h — the calibration file written by perf/calibrate and read at
// init when COLL_COST_FILE names it: measured alpha/beta of one transport
// that replace the transport's stated cost (transport.h LinkCost).
//
// Format: text, one `key value` per line; blank lines and lines starting
// with '#' are ignored; the value is the rest of the line (trimmed).
//   format 1                  required first key; only version 1 exists
//   transport shm             required: shm, socket or shm+socket
//   alpha 4.1e-07             required: seconds per hop, finite, >= 0
//   beta 1.05e-10             required: seconds per byte, finite, > 0
//   host, nranks, date, method, fit_alpha, fit_beta, link_rate ...
//                             optional, informational (nranks: an integer)
// Unknown keys are ignored (later versions may add some); a key given twice,
// a key without a value or a bad number is an error naming the file and
// the line.
//
// COLL_COST_ALPHA / COLL_COST_BETA (seconds, seconds per byte) override
// either parameter after the file, for experiments.  COLL_COST_HANDOFF
// (seconds; 0 turns it off) replaces the time the tuner adds to every hop
// where the ranks outnumber the CPUs they share (tuner.h).
#pragma once

#include <string>

#include "schedule/cost.h"
#include "coll/base/status.h"

namespace coll::tune {

struct CostFile {
  std::string path;
  std::string transport;
  sched::LinkCost cost;
  std::string host, date, method;
  long nranks = 0;  // 0: not given
};

// Parses `text` as the contents of `path` (the path is only used in
// messages).
Result<CostFile> parseCostFile(const std::string& text, const std::string& path);
// Reads and parses the file; a missing/unreadable file is an error too.
Result<CostFile> loadCostFile(const std::string& path);

// The cost the tuner uses and where it came from.
struct ResolvedCost {
  sched::LinkCost cost;
  std::string source;  // "transport default (shm)", "file /x/cost.txt (shm, ...)", "... + env COLL_COST_ALPHA"
};

// What the environment asks for, read (and checked) before the transport
// is known: the parsed COLL_COST_FILE, COLL_COST_ALPHA, COLL_COST_BETA,
// COLL_COST_HANDOFF.
struct CostSettings {
  bool haveFile = false;
  CostFile file;
  bool haveAlpha = false, haveBeta = false, haveHandoff = false;
  double alpha = 0, beta = 0, handoff = 0;
  // A digest of the above: ranks that would price calls differently (and
  // so pick different algorithms) must not meet.
  std::string digest() const;
};
Result<CostSettings> costSettingsFromEnv();

// Applies the settings to the transport's stated cost.  A file for another
// transport is ignored (logged at INFO by the caller through `note`).
ResolvedCost resolveCost(const CostSettings& s, const char* transportName, sched::LinkCost stated,
                         std::string* note);

}  // namespace coll::tune
