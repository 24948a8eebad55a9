// cost.h — the alpha-beta cost of each schedule: one source of truth, used
// by the tuner to choose and by the perf tools to print beside measurements.
//
// alpha: seconds per message hop (latency of one step); beta: seconds per
// byte on one link (1 / bandwidth).  S is the collective's size in bytes as
// nccl-tests counts it (all-reduce: count*elem; all-gather/reduce-scatter:
// nranks*count*elem; broadcast/reduce: count*elem).
#pragma once

#include <cstddef>

#include "schedule/schedules.h"

namespace coll::sched {

struct LinkCost {
  double alpha = 1e-6;       // s per hop
  double beta = 1.0 / 10e9;  // s per byte
  double overhead = 0;       // s per extra message (CostTerms::extraMessages)
};

// Predicted seconds for (k, a) on nranks ranks moving `bytes` (see above):
// hops * alpha + extraMessages * overhead + byteTerm * beta;
// cut as `c` (pipelining: the chunk count adds hops).  Formulas, per the
// schedule files:
//   ring all-reduce:         2(N-1)·alpha + 2(N-1)/N · S·beta
//   ring all-gather / RS:    (N-1)·alpha  + (N-1)/N  · S·beta
//   pipeline bcast / reduce: (N-1+k-1)·alpha + (N-1+k-1)/k · S·beta, k chunks
//   tree all-reduce, one-shot: see their files.
// Chunking is in elements; this form assumes 4-byte elements (float), the
// overload below takes the element size.  Unsupported (k, a): +infinity.
// nranks == 1 or bytes == 0: 0 (a local copy at most).
double predictSeconds(CollKind k, Algo a, int nranks, size_t bytes,
                      const LinkCost& cost, const Chunking& c);
double predictSeconds(CollKind k, Algo a, int nranks, size_t bytes,
                      const LinkCost& cost, const Chunking& c, size_t elemBytes);

// The parameters the formulas use, as the schedules cut `bytes`: chunks per
// channel k (pipeline, tree, one-shot, direct, ring all-gather/RS: chunks
// per channel; ring all-reduce: loops per channel, L), and D, the tree depth.
struct CostTerms {
  double hops = 0;       // the alpha multiplier
  double byteTerm = 0;   // the beta multiplier (bytes on the busiest link/port)
  size_t chunks = 0;     // k (or L for ring all-reduce)
  // The overhead multiplier: messages the busiest rank sends and receives
  // beyond one of each per hop.  One-shot's 2(N-2) per chunk (N-1 sends and
  // N-1 receives in one hop; the broadcast's root N-2); 0 for the rest,
  // whose ranks talk to one or two peers per hop (the tree all-reduce's
  // two-child ranks handle three messages per chunk each way, which the
  // model leaves out).
  double extraMessages = 0;
  // Bytes all ranks send together over the whole call (no multiplier of
  // predictSeconds; the tuner floors the byte term with totalBytes / CPUs
  // where ranks share CPUs, since every rank's copies then run on them).
  double totalBytes = 0;
};
CostTerms costTerms(CollKind k, Algo a, int nranks, size_t bytes, const Chunking& c,
                    size_t elemBytes);

// The formula as text for the perf tools' --model column header/legend,
// e.g. "2(N-1)a + 2(N-1)/N S/B"; "n/a" for an unsupported (k, a).
const char* costFormula(CollKind k, Algo a);

}  // namespace coll::sched
