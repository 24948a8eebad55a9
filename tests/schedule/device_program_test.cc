// The device program (schedule/device_program.h) run on the host by the
// simulator of device_program_sim.h, for every collective, rank count, block
// count, piece size, element size, in and out of place, and for groups
// (cut into launches by size, and where a call depends on an earlier one):
// results, bounds and races.  The race check itself is shown to fail on a
// program missing a barrier, and on dependent calls left in one launch.
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "device_program_sim.h"
#include "schedule/call_memory.h"
#include "schedule/device_program.h"

using coll::sched::channelChunk;
using coll::sched::CollKind;
using coll::sched::DevBuf;
using coll::sched::DevStep;
using coll::sched::DevStepKind;
using coll::sched::programUnit;
using coll::sched::splitProgram;
using devsim::BufferUse;
using devsim::Job;
using devsim::SimCall;
using devsim::simCall;

namespace {

void runJob(int n, int channels, size_t region, size_t oneShot, size_t maxSteps, std::vector<SimCall> calls) {
  Job job(n, channels, region, oneShot, maxSteps, std::move(calls));
  job.checkShapes();
  job.run(static_cast<uint64_t>(n * 1000 + channels));
  const std::string race = job.race();
  INFO(race);
  REQUIRE(race.empty());
  job.checkResults();
}

constexpr CollKind kKinds[] = {CollKind::AllReduce, CollKind::AllGather, CollKind::Broadcast, CollKind::ReduceScatter,
                               CollKind::Reduce};

}  // namespace

TEST_CASE("device program: every collective, rank and block count, piece size", "[device_program]") {
  for (int n : {1, 2, 3, 4, 8})
    for (int channels : {1, 3, 8})
      for (CollKind k : kKinds)
        for (uint64_t count : {0ull, 1ull, 7ull, 1031ull, 5000ull})
          for (uint32_t es : {1u, 2u, 4u, 8u})
            for (bool inPlace : {false, true}) {
              const bool reduces = k == CollKind::AllReduce || k == CollKind::ReduceScatter || k == CollKind::Reduce;
              const int root = n - 1;
              INFO("n " << n << " channels " << channels << " kind " << static_cast<int>(k) << " count " << count
                        << " es " << es << " inPlace " << inPlace);
              // 4 KiB regions: many pieces; one-shot only up to 1 KiB
              // pieces, so both all-reduce forms run.
              runJob(n, channels, 4096, 1024, 64, {simCall(k, count, es, root, inPlace, reduces && count % 2 == 1)});
            }
}

TEST_CASE("device program: a group of mixed calls in one program, cut into launches", "[device_program]") {
  for (int n : {2, 3, 5})
    for (size_t maxSteps : {16, 40, 1000}) {
      INFO("n " << n << " maxSteps " << maxSteps);
      runJob(n, 4, 8192, 2048, maxSteps,
             {simCall(CollKind::AllReduce, 3000, 4, 0, false, true), simCall(CollKind::AllGather, 777, 2, 0, true),
              simCall(CollKind::Broadcast, 1500, 8, 1), simCall(CollKind::ReduceScatter, 901, 1, 0, true),
              simCall(CollKind::Reduce, 2049, 4, n - 1, false, true), simCall(CollKind::AllReduce, 5, 8, 0, true)});
    }
}

TEST_CASE("device program: the race check finds a missing barrier", "[device_program]") {
  // Two pieces of a two-phase all-reduce; drop the barrier between the
  // reduce and the gather: rank s's gather then reads result(t) while rank t
  // may still write it.
  Job job(2, 2, 4096, 0, 1000, {simCall(CollKind::AllReduce, 2048, 4)});
  for (auto& prog : job.programs()) {
    int barriers = 0;
    for (size_t i = 0; i < prog.size(); ++i)
      if (prog[i].kind == DevStepKind::Barrier && ++barriers == 2) {
        prog.erase(prog.begin() + static_cast<std::ptrdiff_t>(i));
        break;
      }
  }
  job.run(1);
  REQUIRE_FALSE(job.race().empty());
}

namespace {

// Calls that each read what an earlier one wrote, or write what an earlier
// one read: all-gather in -> all; broadcast into the all-gather's input;
// all-reduce all in place; reduce-scatter all -> mine; all-reduce mine in
// place; a small all-reduce, then one on its result.  Launches begin at
// calls 1 (it overwrites what call 0 reads), 3, 4 and 6; call 2 reads what
// call 0 wrote, in an earlier launch already.
std::vector<SimCall> dependentGroup(int n, uint64_t c) {
  std::vector<SimCall> calls = {simCall(CollKind::AllGather, c, 4),
                                simCall(CollKind::Broadcast, c, 4, n - 1),
                                simCall(CollKind::AllReduce, c * static_cast<uint64_t>(n), 4, 0, false, true),
                                simCall(CollKind::ReduceScatter, c, 4),
                                simCall(CollKind::AllReduce, c, 4),
                                simCall(CollKind::AllReduce, 5, 4),
                                simCall(CollKind::AllReduce, 5, 4)};
  calls[1].recv = BufferUse{0, false};
  calls[2].send = calls[2].recv = BufferUse{0, true};
  calls[3].send = BufferUse{0, true};
  calls[4].send = calls[4].recv = BufferUse{3, true};
  calls[6].send = calls[6].recv = BufferUse{5, true};
  return calls;
}

}  // namespace

TEST_CASE("device program: calls on an earlier call's memory start launches of their own", "[device_program]") {
  for (int n : {2, 3, 4})
    for (int channels : {1, 3, 8})
      for (size_t maxSteps : {12, 1000}) {
        INFO("n " << n << " channels " << channels << " maxSteps " << maxSteps);
        Job job(n, channels, 4096, 1024, maxSteps, dependentGroup(n, 777));
        job.checkShapes();
        job.run(static_cast<uint64_t>(n * 31 + channels));
        const std::string race = job.race();
        INFO(race);
        REQUIRE(race.empty());
        job.checkResults();
        for (int r = 0; r < n; ++r) {
          if (maxSteps == 1000) REQUIRE(job.launches(r) == 5);
          else REQUIRE(job.launches(r) > 5);  // cut by size too
        }
      }
}

TEST_CASE("device program: the race check finds dependent calls left in one launch", "[device_program]") {
  for (int channels : {3, 8}) {
    INFO("channels " << channels);
    Job job(3, channels, 4096, 1024, 100000, dependentGroup(3, 777), /*cutDependent=*/false);
    job.run(7);
    REQUIRE(job.launches(0) == 1);
    REQUIRE_FALSE(job.race().empty());
  }
}

TEST_CASE("device program: blocks own region bytes whatever the step", "[device_program]") {
  // The same region byte goes to the same block in steps of any offset and
  // length (what the per-block barriers rely on).
  const uint64_t unit = 1024;
  const int channels = 5;
  auto owner = [&](const DevStep& s, uint64_t byte) {
    for (int b = 0; b < channels; ++b) {
      uint64_t lo = 0, hi = 0;
      for (uint64_t k = 0; channelChunk(s, 4, unit, channels, b, k, &lo, &hi); ++k)
        if (s.srcOff + lo <= byte && byte < s.srcOff + hi) return b;
    }
    return -1;
  };
  for (uint64_t off : {0ull, 4ull, 1020ull, 1024ull, 5000ull})
    for (uint64_t count : {1ull, 255ull, 256ull, 3000ull}) {
      DevStep s;
      s.kind = DevStepKind::Copy;
      s.src = DevBuf::Input;
      s.srcOff = off;
      s.count = count;
      for (uint64_t byte = off; byte < off + count * 4; byte += 4)
        REQUIRE(owner(s, byte) == static_cast<int>((byte / unit) % channels));
    }
}

TEST_CASE("device program: launch cuts and chunk unit", "[device_program]") {
  std::vector<DevStep> p(7);
  for (int i : {2, 3, 6}) p[i].kind = DevStepKind::Barrier;
  for (int i : {0, 1, 4, 5}) p[i].kind = DevStepKind::Copy;
  REQUIRE(splitProgram(p, 100) == std::vector<size_t>{7});
  REQUIRE(splitProgram(p, 4) == std::vector<size_t>{4, 7});
  REQUIRE(splitProgram(p, 3) == std::vector<size_t>{3, 4, 7});
  REQUIRE(splitProgram(p, 2).empty());  // steps 0-2 need three
  p.back().kind = DevStepKind::Copy;
  REQUIRE(splitProgram(p, 100).empty());  // does not end with a barrier
  p.back().kind = DevStepKind::Barrier;
  // Launches that must begin at a step (after a barrier), with the size cuts.
  REQUIRE(splitProgram(p, 100, {3}) == std::vector<size_t>{3, 7});
  REQUIRE(splitProgram(p, 100, {0, 3, 4, 7}) == std::vector<size_t>{3, 4, 7});
  REQUIRE(splitProgram(p, 4, {3}) == std::vector<size_t>{3, 7});
  REQUIRE(splitProgram(p, 3, {4}) == std::vector<size_t>{3, 4, 7});
  REQUIRE(splitProgram(p, 100, {2}).empty());  // step 1 is no barrier
  REQUIRE(programUnit(256 << 20, 66) == 32 << 10);
  REQUIRE(programUnit(1 << 20, 32) == 32 << 10);
  REQUIRE(programUnit(1 << 20, 64) == 16 << 10);
  REQUIRE(programUnit(4096, 8) == 1 << 10);
}
