#include <catch2/catch.hpp>
#include <cstdio>
#include "harness.h"
using namespace coll::simtest;
using namespace coll::sched;
TEST_CASE("smoke") {
  for (auto kind : {CollKind::AllReduce, CollKind::AllGather, CollKind::ReduceScatter, CollKind::Broadcast, CollKind::Reduce, CollKind::Send})
  for (auto algo : {Algo::Ring, Algo::Tree, Algo::OneShot, Algo::Pipeline, Algo::Direct}) {
    if (!algoSupports(kind, algo)) continue;
    for (int N : {1, 2, 3, 4, 5, 7, 8, 16, 17})
      for (size_t count : {0ul, 1ul, 7ul, 100ul, 1009ul})
        for (int nch : {1, 2, 4})
          for (size_t chunk : {1ul, 3ul, 16ul, 1024ul})
            for (size_t depth : {0ul, 1ul, 2ul}) {
              Case c; c.kind = kind; c.algo = algo; c.nranks = N; c.root = N / 2; c.count = count;
              c.chunking.nchannels = nch; c.chunking.chunkElems = chunk; c.fifoDepth = depth;
              auto o = runCase(c);
              if (!o.failures.empty()) { static int shown = 0; if (shown++ < 30) printf("%s: %s\n", describe(c).c_str(), o.failures[0].substr(0, 600).c_str()); }
            }
  }
}
