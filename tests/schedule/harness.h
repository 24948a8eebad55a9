// harness.h — one test case end to end: build every rank's schedule with
// buildSchedule, simulate it on random data, and compare every Output
// element with a reference computed independently (reference.cc).
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "schedule/schedules.h"
#include "simulator.h"

namespace coll::simtest {

struct Case {
  sched::CollKind kind = sched::CollKind::AllReduce;
  sched::Algo algo = sched::Algo::Ring;
  int nranks = 1;
  int root = 0;  // Broadcast/Reduce root; unused for Send/Recv (pairs 2i -> 2i+1)
  size_t count = 0;
  sched::Chunking chunking;
  bool integer = false;   // uint64 with wrapping sum, else double
  size_t fifoDepth = 0;   // 0 = unbounded
  bool inPlace = false;
};

std::string describe(const Case& c);

struct CaseOutcome {
  std::vector<std::string> failures;  // empty: the case passed
  size_t rounds = 0;
  size_t messages = 0;
  size_t maxElemsSentByRank = 0;
  size_t totalElemsSent = 0;
};

CaseOutcome runCase(const Case& c);
// As runCase, but simulates `job` (e.g. hand-made schedules) instead of
// buildJob(c); the reference is still that of case c.
CaseOutcome runJob(const Case& c, const JobSpec& job);

// The schedules of every rank of case c (Send/Recv: pairs 2i -> 2i+1).
JobSpec buildJob(const Case& c);

}  // namespace coll::simtest
