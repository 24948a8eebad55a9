// algorithms_test.cc — every algorithm, simulated on real data, checked
// element by element against the reference (harness.cc).
//
// Grids:
//   main      double (pre x3, post /N), the smallest FIFO the algorithm
//             supports (minFifoSlots: 1, ring 2), out of place;
//             N = 1..17 (sanitizer builds: 1-5, 7, 8, 16, 17; see
//             test_scale.h), counts {0, 1, N-1, N, N+1, 7, 13, 1009},
//             chunkElems {1, 3, 16, 1024, 2^40}, nchannels {1, 2, 4},
//             roots {0, N/2, N-1}.
//   exact     uint64 (wrapping sum, pre x3, post x odd constant), unbounded
//             FIFOs, in place where algoInPlaceSafe; a smaller grid.
//   large     count 1M+3 with coarse chunks: N = 1..17, and N = 1..4 for
//             all-gather/reduce-scatter (whose count is per rank).
// A bounded FIFO that completes implies every deeper one does (the ranks
// are a deterministic process network), so the main grid's small FIFOs
// cover the deep ones; the exact grid covers unbounded links.
#include <catch2/catch.hpp>

#include <algorithm>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "harness.h"
#include "test_scale.h"

using namespace coll::simtest;
using coll::sched::Algo;
using coll::sched::CollKind;

namespace {

struct Algorithm {
  CollKind kind;
  Algo algo;
};

// One grid point; callers set the data mode, FIFO depth and aliasing.
Case caseOf(const Algorithm& a, int nranks, int root, size_t count, coll::sched::Chunking chunking) {
  Case c;
  c.kind = a.kind;
  c.algo = a.algo;
  c.nranks = nranks;
  c.root = root;
  c.count = count;
  c.chunking = chunking;
  return c;
}

size_t minDepth(const Algorithm& a) { return static_cast<size_t>(coll::sched::minFifoSlots(a.kind, a.algo)); }

const Algorithm kAll[] = {
    {CollKind::AllReduce, Algo::Ring},     {CollKind::AllReduce, Algo::Tree},
    {CollKind::AllReduce, Algo::OneShot},  {CollKind::AllGather, Algo::Ring},
    {CollKind::AllGather, Algo::OneShot},  {CollKind::ReduceScatter, Algo::Ring},
    {CollKind::Broadcast, Algo::Pipeline}, {CollKind::Broadcast, Algo::OneShot},
    {CollKind::Broadcast, Algo::Tree},     {CollKind::Reduce, Algo::Pipeline},
    {CollKind::Send, Algo::Direct},        {CollKind::AllReduce, Algo::Doubling},
    {CollKind::AllGather, Algo::Doubling},  {CollKind::AllReduce, Algo::Halving},
    {CollKind::ReduceScatter, Algo::OneShot}, {CollKind::ReduceScatter, Algo::Halving},
};

// The main and exact grids' rank counts: every N up to 17, or in a
// sanitizer build 1-5 and the powers of two 8 and 16 with a neighbour each
// (where the tree's shape changes), about 40% of the work.
std::vector<int> gridRanks() {
  if (coll::testing::kSanitizedBuild) return {1, 2, 3, 4, 5, 7, 8, 16, 17};
  std::vector<int> ns;
  for (int n = 1; n <= 17; ++n) ns.push_back(n);
  return ns;
}

// The grids' chunk sizes and channel counts.  A sanitizer build keeps the
// chunk that splits everything (1), one that divides nothing evenly (3) and
// one that never splits (2^40), and one and four channels (odd and even
// channels run opposite ways): a bad access or overflow shows in these
// shapes; the plain build runs every size for the values.
std::vector<size_t> gridChunks() {
  if (coll::testing::kSanitizedBuild) return {1, 3, size_t{1} << 40};
  return {1, 3, 16, 1024, size_t{1} << 40};
}
std::vector<int> gridChannels() {
  if (coll::testing::kSanitizedBuild) return {1, 4};
  return {1, 2, 4};
}

bool rooted(CollKind k) { return k == CollKind::Broadcast || k == CollKind::Reduce; }

std::vector<size_t> unique(std::vector<size_t> v) {
  std::sort(v.begin(), v.end());
  v.erase(std::unique(v.begin(), v.end()), v.end());
  return v;
}

std::vector<int> rootsFor(CollKind k, int N) {
  if (!rooted(k)) return {0};
  std::vector<size_t> r = unique({0, static_cast<size_t>(N / 2), static_cast<size_t>(N - 1)});
  return std::vector<int>(r.begin(), r.end());
}

// Runs every case, reports the first few failures in full, then requires
// that none failed.
struct Grid {
  size_t cases = 0;
  size_t failed = 0;

  void run(const Case& c) {
    ++cases;
    const CaseOutcome o = runCase(c);
    if (o.failures.empty()) return;
    if (failed++ < 4) {
      std::string msg = describe(c);
      for (size_t i = 0; i < o.failures.size() && i < 6; ++i) msg += "\n  " + o.failures[i];
      FAIL_CHECK(msg);
    }
  }
};

std::string label(const Algorithm& a) {
  return std::string(coll::sched::collKindName(a.kind)) + "/" + coll::sched::algoName(a.algo);
}

}  // namespace

TEST_CASE("every algorithm / main grid: N 1..17 / all counts / chunks / channels / roots",
          "[algorithms][main_grid]") {
  for (const Algorithm& a : kAll) {
    DYNAMIC_SECTION(label(a)) {
      Grid g;
      for (int N : gridRanks())
        for (size_t count : unique({0, 1, static_cast<size_t>(N - 1), static_cast<size_t>(N),
                                    static_cast<size_t>(N + 1), 7, 13, 1009}))
          for (size_t chunk : gridChunks())
            for (int nch : gridChannels())
              for (int root : rootsFor(a.kind, N)) {
                // chunk 1 on 1009 elements is slow and adds nothing over 13
                // on the many-channel configurations.
                if (count == 1009 && chunk == 1 && nch != 1) continue;
                Case c = caseOf(a, N, root, count, {nch, chunk});
                c.fifoDepth = minDepth(a);
                g.run(c);
              }
      INFO(g.cases << " cases");
      REQUIRE(g.failed == 0);
    }
  }
}

TEST_CASE("every algorithm / exact grid: uint64 / unbounded FIFOs / in place", "[algorithms][exact_grid]") {
  for (const Algorithm& a : kAll) {
    DYNAMIC_SECTION(label(a)) {
      Grid g;
      for (int N : gridRanks())
        for (size_t count : unique({0, 1, static_cast<size_t>(N + 1), 13, 1009}))
          for (size_t chunk : coll::testing::kSanitizedBuild ? std::vector<size_t>{1, size_t{1} << 40}
                                                              : std::vector<size_t>{1, 16, size_t{1} << 40})
            for (int nch : {1, 4})
              for (int root : rootsFor(a.kind, N))
                for (bool inPlace : {false, true}) {
                  if (inPlace && !coll::sched::algoInPlaceSafe(a.kind, a.algo, N)) continue;
                  if (count == 1009 && chunk == 1 && nch != 1) continue;
                  Case c = caseOf(a, N, root, count, {nch, chunk});
                  c.integer = true;
                  c.inPlace = inPlace;
                  g.run(c);
                }
      INFO(g.cases << " cases");
      REQUIRE(g.failed == 0);
    }
  }
}

TEST_CASE("every algorithm / count 1M+3 with coarse chunks", "[algorithms][large]") {
  const size_t big = (size_t{1} << 20) + 3;
  for (const Algorithm& a : kAll) {
    DYNAMIC_SECTION(label(a)) {
      Grid g;
      const bool perRank = a.kind == CollKind::AllGather || a.kind == CollKind::ReduceScatter;
      // The collectives whose buffers are `count` long: N up to 5, the
      // powers of two 8 and 16 and the odd 17 (the main grid has every N
      // up to 17 at smaller counts); the per-rank ones (output or input
      // N*count) stop where memory would pass a few GiB.
      const std::vector<int> ns = perRank ? std::vector<int>{1, 2, 3, 4} : std::vector<int>{1, 2, 3, 4, 5, 8, 16, 17};
      for (int N : ns) {
        Case c = caseOf(a, N, N - 1, big, {2, size_t{1} << 17});
        c.fifoDepth = minDepth(a);
        c.integer = N == 2;
        g.run(c);
      }
      REQUIRE(g.failed == 0);
    }
  }
}

TEST_CASE("no step exceeds chunkElems / no channel beyond nchannels", "[algorithms]") {
  for (const Algorithm& a : kAll)
    for (int N : {1, 2, 3, 8, 17})
      for (size_t count : {size_t{0}, size_t{5}, size_t{1009}, size_t{100000}})
        for (size_t chunk : {size_t{1}, size_t{3}, size_t{17}, size_t{100}, size_t{4096}})
          for (int nch : {1, 3, 4}) {
            if (count == 100000 && chunk < 100) continue;  // millions of steps, nothing new
            // (sanitizer builds: the 100000-element schedules at the
            // coarsest chunk only, where a step's count is largest)
            if (coll::testing::kSanitizedBuild && count == 100000 && chunk != 4096) continue;
            const Case c = caseOf(a, N, N / 2, count, {nch, chunk});
            const JobSpec job = buildJob(c);
            for (const auto& s : job.schedules) {
              if (s.channels.empty()) continue;  // idle rank of a Send/Recv job
              REQUIRE(s.channels.size() == static_cast<size_t>(nch));
              for (const auto& ch : s.channels)
                for (const auto& st : ch.steps)
                  if (st.count == 0 || st.count > chunk) FAIL(describe(c) << ": " << describeStep(st));
            }
          }
}

TEST_CASE("the ring uses both directions: even channels forward / odd reversed", "[algorithms]") {
  const auto s = coll::sched::ringAllReduce(2, 5, 1000, {2, 1 << 20});
  REQUIRE(s.channels.size() == 2);
  CHECK(s.channels[0].steps.front().sendPeer == 3);
  CHECK(s.channels[1].steps.front().sendPeer == 1);
  // One loop of 2(N-1) messages: Send, 3 RecvReduceSend, RecvReduceCopySend,
  // 3 RecvCopySend, Recv.
  const auto& st = s.channels[0].steps;
  REQUIRE(st.size() == 9);
  CHECK(st[0].kind == coll::sched::StepKind::Send);
  CHECK(st[4].kind == coll::sched::StepKind::RecvReduceCopySend);
  CHECK(st[4].final);
  CHECK(st[8].kind == coll::sched::StepKind::Recv);
  for (size_t i = 0; i < st.size(); ++i) CHECK(st[i].final == (i == 4));
}

// The ring, pipeline and tree schedules with the ring in other orders than
// rank order (Chunking::ringOrder): reversed, two hosts dealt in turn (what
// ringOrderGrouped makes of rank r on host r % 2), and a shuffle; exact
// data, the smallest FIFOs, in place where allowed.
TEST_CASE("ring, pipeline and tree schedules in any ring order", "[algorithms][ring_order]") {
  const Algorithm ringAlgos[] = {{CollKind::AllReduce, Algo::Ring},     {CollKind::AllGather, Algo::Ring},
                                 {CollKind::ReduceScatter, Algo::Ring}, {CollKind::Broadcast, Algo::Pipeline},
                                 {CollKind::Reduce, Algo::Pipeline},    {CollKind::AllReduce, Algo::Tree},
                                 {CollKind::Broadcast, Algo::Tree}};
  for (const Algorithm& a : ringAlgos) {
    DYNAMIC_SECTION(label(a)) {
      Grid g;
      for (int N : {2, 3, 4, 5, 8}) {
        std::vector<std::vector<int>> orders;
        std::vector<int> rev(N), byHost, shuffled(N);
        for (int i = 0; i < N; ++i) rev[i] = shuffled[i] = N - 1 - i;
        for (int h = 0; h < 2; ++h)
          for (int r = h; r < N; r += 2) byHost.push_back(r);
        std::mt19937 rng(static_cast<unsigned>(N));
        std::shuffle(shuffled.begin(), shuffled.end(), rng);
        orders = {rev, byHost, shuffled};
        for (const auto& order : orders)
          for (size_t count : unique({1, static_cast<size_t>(N + 1), 1009}))
            for (size_t chunk : {size_t{1}, size_t{16}, size_t{1} << 40})
              for (int nch : {1, 4})
                for (int root : rootsFor(a.kind, N))
                  for (bool inPlace : {false, true}) {
                    if (inPlace && !coll::sched::algoInPlaceSafe(a.kind, a.algo, N)) continue;
                    if (count == 1009 && chunk == 1 && nch != 1) continue;
                    Case c = caseOf(a, N, root, count, {nch, chunk, order.data()});
                    c.integer = true;
                    c.inPlace = inPlace;
                    c.fifoDepth = minDepth(a);
                    g.run(c);
                  }
      }
      INFO(g.cases << " cases");
      REQUIRE(g.failed == 0);
    }
  }
}

TEST_CASE("a ring order moves the ring: neighbours follow it, both directions", "[algorithms][ring_order]") {
  const int order[] = {0, 2, 4, 1, 3};
  const auto s = coll::sched::ringAllReduce(4, 5, 1000, {2, 1 << 20, order});
  REQUIRE(s.channels.size() == 2);
  CHECK(s.channels[0].steps.front().sendPeer == 1);  // 4 -> 1 on the forward ring
  CHECK(s.channels[0].steps.front().recvPeer == -1);
  CHECK(s.channels[1].steps.front().sendPeer == 2);  // 4 -> 2 on the reversed one
  const int notPermutation[] = {0, 2, 2, 1, 3};
  CHECK_THROWS_AS(coll::sched::ringAllReduce(0, 5, 10, {1, 16, notPermutation}), std::invalid_argument);
}

// The links a schedule uses: {rank, peer} pairs of its sends, each once.
std::vector<std::pair<int, int>> linksOf(CollKind k, Algo a, int N, int root, const coll::sched::Chunking& c) {
  std::vector<std::pair<int, int>> links;
  for (int r = 0; r < N; ++r)
    for (const auto& ch : coll::sched::buildSchedule(k, a, r, N, root, 64, c).channels)
      for (const auto& st : ch.steps)
        if (st.sendPeer >= 0) links.emplace_back(std::min(r, st.sendPeer), std::max(r, st.sendPeer));
  std::sort(links.begin(), links.end());
  links.erase(std::unique(links.begin(), links.end()), links.end());
  return links;
}

int crossingHosts(const std::vector<std::pair<int, int>>& links) {
  return static_cast<int>(std::count_if(links.begin(), links.end(), [](auto l) { return l.first % 2 != l.second % 2; }));
}

// Ranks dealt to two hosts in turn (rank r on host r % 2): in rank order
// every leaf of the double binary tree (half the ranks per tree) has its
// parent on the other host, and every odd step of the binomial broadcast
// crosses; over the host order only the edges that join the two hosts'
// subtrees cross, at most one per level and tree (or channel): 2 ceil(log2 N).
// The same for N = 4: 4 links against 3 in rank order; N = 32: 6 against
// 24 (tree all-reduce), 9 against 32 (broadcast).
TEST_CASE("a ring order moves the trees: their edges stay inside hosts", "[algorithms][ring_order]") {
  for (int N = 4; N <= 32; ++N) {
    INFO("N = " << N);
    std::vector<int> order;
    for (int h = 0; h < 2; ++h)
      for (int r = h; r < N; r += 2) order.push_back(r);
    int levels = 0;
    while ((1 << levels) < N) ++levels;
    const coll::sched::Chunking byRank{2, size_t{1} << 40}, byHost{2, size_t{1} << 40, order.data()};
    for (CollKind k : {CollKind::AllReduce, CollKind::Broadcast}) {
      const int inRankOrder = crossingHosts(linksOf(k, Algo::Tree, N, 0, byRank));
      const int inHostOrder = crossingHosts(linksOf(k, Algo::Tree, N, 0, byHost));
      INFO(coll::sched::collKindName(k) << ": " << inRankOrder << " links between the hosts in rank order, "
                                        << inHostOrder << " in host order");
      CHECK(inRankOrder >= N / 2);
      CHECK(inHostOrder <= 2 * levels);
      if (N >= 12) CHECK(inHostOrder < inRankOrder);
    }
  }
}

TEST_CASE("in-place one-shot with N >= 3 is flagged / and needs a separate Input",
          "[algorithms]") {
  CHECK(coll::sched::algoInPlaceSafe(CollKind::AllReduce, Algo::OneShot, 2));
  CHECK_FALSE(coll::sched::algoInPlaceSafe(CollKind::AllReduce, Algo::OneShot, 3));
  Case c;
  c.kind = CollKind::AllReduce;
  c.algo = Algo::OneShot;
  c.nranks = 3;
  c.count = 40;
  c.integer = true;
  c.inPlace = true;
  const CaseOutcome o = runCase(c);
  REQUIRE_FALSE(o.failures.empty());
  CHECK(o.failures[0].find("in-place hazard") != std::string::npos);
}
