// simulator.h — runs every rank's Schedule in one process, one thread, on
// real data, and reports what a broken schedule does wrong.
//
// Links: one FIFO per (channel, sender -> receiver), unbounded or holding at
// most `fifoDepth` messages.  Execution is in synchronous rounds: in a round
// every (rank, channel) executes at most its next step, and only if that
// step's message arrived in an earlier round and its outgoing link has a slot
// that was free at the start of the round.  Steps are atomic (a step that
// receives and sends needs both), so the result does not depend on the order
// ranks are visited, and `rounds` is the critical path in steps.
//
// Values: double (op = +, pre = x*preF64, post = /nranks when avgF64) or
// uint64_t (op = wrapping +, pre = x*preU64, post = x*postU64, wrapping);
// the odd multiplier post makes a missing or doubled post-op visible in
// integer mode too.  Alongside every element the simulator tracks whether it
// was written and whether its value is finished (derived from a final step),
// through buffers and wires, to check the `final` rules exactly.
//
// Reported (SimError::kind): invalid steps (peers, bounds, zero counts,
// writing Input, final in a non-reducing collective, Output writes on ranks
// that must not write it), deadlock (naming ranks, channels, steps and what
// they wait for), count mismatch between a send and its receive, sends that
// never met a receive, reads of never-written Output or Scratch (each rank
// gets its schedule's scratchElems, filled with garbage), in-place hazards
// (reading Input after it was overwritten), reducing a finished value or
// finishing it twice, Output elements never written or left non-final, and
// outputs that are not bit-identical across ranks where they must be.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "schedule/schedules.h"

namespace coll::simtest {

// Bit-for-bit equality (a NaN equals itself, +0 differs from -0).
template <class T> bool sameBits(T a, T b) { return std::memcmp(&a, &b, sizeof(T)) == 0; }

enum class ErrorKind {
  InvalidStep,
  Deadlock,
  CountMismatch,
  UnmatchedSend,
  ReadsUnwritten,
  InPlaceHazard,
  ReducedFinal,
  DoubleFinal,
  UnwrittenOutput,
  NonFinalOutput,
  NotBitIdentical,
};
const char* errorKindName(ErrorKind k);

struct SimError {
  ErrorKind kind;
  std::string message;
};

// One rank's buffers.  When `alias` is set, Input and Output are views of
// one storage at element offsets inBase and outBase (an in-place call).
struct RankLayout {
  size_t inCount = 0;
  size_t outCount = 0;
  bool alias = false;
  size_t inBase = 0;
  size_t outBase = 0;
  bool outputForbidden = false;  // Reduce non-root: any Output write is an error
  bool outputExpected = true;    // every Output element must be written
};

struct JobSpec {
  std::string name;              // for messages
  int nranks = 1;
  bool reducing = false;         // pre/post/final rules apply
  bool outputsIdentical = false; // all ranks' Outputs must be bit-identical
  std::vector<RankLayout> ranks;
  std::vector<sched::Schedule> schedules;  // per rank
};

// The buffers of collective k as the C API defines them (count as in the
// API, root = peer for Send/Recv); schedules left empty.
JobSpec collectiveJob(sched::CollKind k, int nranks, int root, size_t count, bool inPlace);

struct SimOptions {
  size_t fifoDepth = 0;  // messages per link; 0 = unbounded
  double preF64 = 1.0;
  bool avgF64 = false;
  uint64_t preU64 = 1;
  uint64_t postU64 = 1;
  size_t maxErrors = 16;  // stop collecting after this many
};

template <class T>
struct SimResult {
  std::vector<SimError> errors;
  std::vector<std::vector<T>> outputs;  // per rank: its Output view at the end
  size_t rounds = 0;                    // rounds in which some step ran
  size_t steps = 0;                     // steps executed, all ranks
  size_t messages = 0;                  // messages sent, all links
  size_t maxElemsSentByRank = 0;        // elements sent by the busiest rank
  size_t totalElemsSent = 0;            // elements sent by all ranks together

  bool ok() const { return errors.empty(); }
  bool has(ErrorKind k) const;
  std::string summary() const;  // every error, one per line
};

// inputs[r] has layout.inCount elements (empty where inCount == 0).
template <class T>
SimResult<T> simulate(const JobSpec& job, const std::vector<std::vector<T>>& inputs,
                      const SimOptions& opt);

extern template SimResult<double> simulate(const JobSpec&, const std::vector<std::vector<double>>&,
                                           const SimOptions&);
extern template SimResult<uint64_t> simulate(const JobSpec&,
                                             const std::vector<std::vector<uint64_t>>&,
                                             const SimOptions&);

// "rank 3 ch 1 step 17: RecvReduceSend(2 -> 4, Input+48, n=16)".
std::string describeStep(const sched::Step& s);

}  // namespace coll::simtest
