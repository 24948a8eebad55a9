// fr_record_cost — what the flight recorder adds to one call, measured
// alone: begin + end of a call's entry (record/flight_recorder.h), as a
// tiny all-reduce on the board makes them, in a loop of 10 million; three
// runs.  The end-to-end comparison (perf/fr-cost.sh) is at the mercy of the
// machine's noise; this is the recorder's own time.
//
//   build/perf/fr_record_cost
#include <chrono>
#include <cstdio>

#include "record/flight_recorder.h"

using namespace coll::record;

int main() {
  FlightRecorder fr(2000);
  CallInfo c;
  c.count = 2;
  c.dtype = 7;
  c.redop = 0;
  c.algo = kBoard;
  c.channels = 1;
  constexpr int kCalls = 10'000'000;
  for (int run = 0; run < 3; ++run) {
    const auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < kCalls; ++i) {
      c.collSeq = i;
      fr.end(fr.begin(c, CallState::Started), true);
    }
    const double ns = std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - t0).count();
    printf("run %d: %.1f ns per call (begin + end)\n", run, ns / kCalls);
  }
  return 0;
}
