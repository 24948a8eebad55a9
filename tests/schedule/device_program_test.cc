// The device program (schedule/device_program.h) run on the host: every
// rank's program, split into blocks exactly as the CUDA kernel splits it
// (channelChunk) and into launches (splitProgram), executed on byte arrays,
// with every access recorded.  Checks, for every collective, rank count,
// block count, piece size, element size, in and out of place:
//   * the result equals the reference (wrapping integer sum, pre-multiply
//     by 3 where the call says so), and out-of-place inputs are untouched;
//   * every access stays inside its buffer, and non-roots never touch the
//     buffers NCCL lets them pass as NULL;
//   * ranks' programs have the same length and barriers at the same steps;
//   * no race: two accesses to the same byte, one a write, by different
//     (rank, block) pairs are ordered only when they are in the same block
//     in different epochs (the block's barriers), or in different launches;
//     and within one block, two steps of one epoch never touch the same
//     byte (a step's threads differ from the next step's: no barrier there).
// The race check itself is shown to fail on a program missing a barrier.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cstring>
#include <map>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include "schedule/device_program.h"

using coll::sched::appendDeviceProgram;
using coll::sched::channelChunk;
using coll::sched::CollKind;
using coll::sched::DevBuf;
using coll::sched::DevProgramCall;
using coll::sched::DevStep;
using coll::sched::DevStepKind;
using coll::sched::programUnit;
using coll::sched::splitProgram;

namespace {

struct SimCall {
  DevProgramCall c;
  bool premul = false;
  bool inPlace = false;
};

struct Access {
  int rank, block, epoch, launch, step;
  uint64_t lo, hi;
  bool write;
};

// Where a logical buffer lives: a space (user memory of (rank, call), or a
// rank's input / result region) and its byte offset and size there.
enum Space { kUser = 0, kInput = 1, kResult = 2 };
struct Place {
  int owner, space, call;
  uint64_t off, size;
};

class Job {
 public:
  Job(int n, int channels, size_t regionBytes, size_t oneShot, size_t maxSteps, std::vector<SimCall> calls)
      : n_(n), channels_(channels), region_(regionBytes), calls_(std::move(calls)), maxSteps_(maxSteps) {
    uint64_t maxPiece = 0;
    for (const SimCall& sc : calls_) maxPiece = std::max<uint64_t>(maxPiece, std::min<uint64_t>(region_, sc.c.count * sc.c.elemSize));
    unit_ = programUnit(maxPiece, channels_);
    for (int r = 0; r < n_; ++r) {
      std::vector<DevStep> prog;
      for (size_t i = 0; i < calls_.size(); ++i)
        REQUIRE(appendDeviceProgram(prog, calls_[i].c, static_cast<uint8_t>(i), r, n_, region_, oneShot));
      programs_.push_back(std::move(prog));
    }
    if (!programs_[0].empty()) {
      ends_ = splitProgram(programs_[0], maxSteps);
      REQUIRE(!ends_.empty());
    }
    std::mt19937_64 rng(12345 + n * 7 + channels);
    for (int r = 0; r < n_; ++r) {
      input_.emplace_back(region_);
      result_.emplace_back(region_);
      user_.emplace_back();
      for (size_t i = 0; i < calls_.size(); ++i) {
        std::vector<uint8_t> u(userBytes(i, r));
        for (auto& b : u) b = static_cast<uint8_t>(rng());
        user_[r].push_back(std::move(u));
      }
    }
    initialUser_ = user_;
  }

  // Every rank's program has the same shape; splitting gives the same cuts.
  void checkShapes() const {
    for (int r = 1; r < n_; ++r) {
      REQUIRE(programs_[r].size() == programs_[0].size());
      for (size_t i = 0; i < programs_[0].size(); ++i)
        REQUIRE((programs_[r][i].kind == DevStepKind::Barrier) == (programs_[0][i].kind == DevStepKind::Barrier));
      if (!programs_[0].empty()) REQUIRE(splitProgram(programs_[r], maxStepsSeen()) == ends_);
    }
    if (!programs_[0].empty()) REQUIRE(programs_[0].back().kind == DevStepKind::Barrier);
  }

  // Runs every epoch: all ranks' blocks, in an order that differs by seed.
  void run(uint64_t seed) {
    std::mt19937_64 rng(seed);
    const size_t len = programs_[0].size();
    size_t i = 0;
    int epoch = 0;
    while (i < len) {
      size_t end = i;
      while (end < len && programs_[0][end].kind != DevStepKind::Barrier) ++end;
      std::vector<std::pair<int, int>> order;
      for (int r = 0; r < n_; ++r)
        for (int b = 0; b < channels_; ++b) order.emplace_back(r, b);
      std::shuffle(order.begin(), order.end(), rng);
      const int launch = launchOf(i);
      for (auto [r, b] : order)
        for (size_t s = i; s < end; ++s) exec(r, b, epoch, launch, static_cast<int>(s), programs_[r][s]);
      i = end + 1;  // past the barrier
      ++epoch;
    }
  }

  // The first race found, or "".
  std::string race() const {
    for (const auto& [key, list] : accesses_) {
      std::vector<Access> a = list;
      std::sort(a.begin(), a.end(), [](const Access& x, const Access& y) { return x.lo < y.lo; });
      for (size_t i = 0; i < a.size(); ++i)
        for (size_t j = i + 1; j < a.size() && a[j].lo < a[i].hi; ++j) {
          const Access &x = a[i], &y = a[j];
          if (!x.write && !y.write) continue;
          if (x.rank == y.rank && x.block == y.block && (x.epoch != y.epoch || x.step == y.step)) continue;
          if (x.launch != y.launch) continue;
          if (x.block == y.block && x.epoch != y.epoch) continue;
          return "space (" + std::to_string(std::get<0>(key)) + "," + std::to_string(std::get<1>(key)) + "," +
                 std::to_string(std::get<2>(key)) + ") bytes " + std::to_string(std::max(x.lo, y.lo)) + ": rank " +
                 std::to_string(x.rank) + " block " + std::to_string(x.block) + " epoch " + std::to_string(x.epoch) +
                 (x.write ? " writes" : " reads") + ", rank " + std::to_string(y.rank) + " block " +
                 std::to_string(y.block) + " epoch " + std::to_string(y.epoch) + (y.write ? " writes" : " reads");
        }
    }
    return "";
  }

  // Compares every rank's result with the reference.
  void checkResults() const {
    for (size_t i = 0; i < calls_.size(); ++i)
      for (int r = 0; r < n_; ++r) checkCall(i, r);
  }

  std::vector<std::vector<DevStep>>& programs() { return programs_; }
  size_t maxStepsSeen() const { return maxSteps_; }

 private:
  uint64_t count(size_t i) const { return calls_[i].c.count; }
  uint32_t es(size_t i) const { return calls_[i].c.elemSize; }
  CollKind kind(size_t i) const { return calls_[i].c.kind; }
  bool gathered(size_t i) const { return kind(i) == CollKind::AllGather || kind(i) == CollKind::ReduceScatter; }

  uint64_t sendBytes(size_t i, int r) const {
    if (kind(i) == CollKind::Broadcast && r != calls_[i].c.root) return 0;  // NULL allowed
    return count(i) * es(i) * (kind(i) == CollKind::ReduceScatter ? n_ : 1);
  }
  uint64_t recvBytes(size_t i, int r) const {
    if (kind(i) == CollKind::Reduce && r != calls_[i].c.root) return 0;  // NULL allowed
    return count(i) * es(i) * (kind(i) == CollKind::AllGather ? n_ : 1);
  }
  uint64_t sendOff(size_t i, int r) const {
    if (!calls_[i].inPlace) return 0;
    return kind(i) == CollKind::AllGather ? static_cast<uint64_t>(r) * count(i) * es(i) : 0;
  }
  uint64_t recvOff(size_t i, int r) const {
    if (!calls_[i].inPlace) return sendBytes(i, r);
    return kind(i) == CollKind::ReduceScatter ? static_cast<uint64_t>(r) * count(i) * es(i) : 0;
  }
  uint64_t userBytes(size_t i, int r) const {
    const uint64_t s = count(i) * es(i), big = s * (gathered(i) ? n_ : 1);
    return calls_[i].inPlace ? big : sendBytes(i, r) + recvBytes(i, r);
  }

  int launchOf(size_t step) const {
    for (size_t l = 0; l < ends_.size(); ++l)
      if (step < ends_[l]) return static_cast<int>(l);
    return static_cast<int>(ends_.size());
  }

  Place place(int rank, size_t call, DevBuf b, int srcRank, uint64_t off) const {
    switch (b) {
      case DevBuf::Send: return {rank, kUser, static_cast<int>(call), sendOff(call, rank) + off, sendBytes(call, rank)};
      case DevBuf::Recv: return {rank, kUser, static_cast<int>(call), recvOff(call, rank) + off, recvBytes(call, rank)};
      case DevBuf::Input: return {srcRank, kInput, -1, off, region_};
      case DevBuf::Result: return {srcRank, kResult, -1, off, region_};
    }
    return {};
  }
  // The bytes behind a place, after checking [lo, hi) lies inside it.
  uint8_t* bytes(const Place& p, uint64_t lo, uint64_t hi, uint64_t logicalOff) {
    INFO("owner " << p.owner << " space " << p.space << " call " << p.call << " at " << logicalOff + lo << ".."
                  << logicalOff + hi << " of " << p.size);
    REQUIRE(p.owner >= 0);
    REQUIRE(p.owner < n_);
    REQUIRE(logicalOff + hi <= p.size);
    std::vector<uint8_t>& v = p.space == kUser ? user_[p.owner][p.call] : p.space == kInput ? input_[p.owner]
                                                                                             : result_[p.owner];
    REQUIRE(p.off + hi <= v.size());
    return v.data() + p.off;
  }
  void record(const Place& p, int rank, int block, int epoch, int launch, int step, uint64_t lo, uint64_t hi,
              bool write) {
    accesses_[{p.owner, p.space, p.call}].push_back({rank, block, epoch, launch, step, p.off + lo, p.off + hi, write});
  }

  static uint64_t get(const uint8_t* p, uint32_t es) {
    uint64_t v = 0;
    std::memcpy(&v, p, es);
    return v;
  }
  static void put(uint8_t* p, uint64_t v, uint32_t es) { std::memcpy(p, &v, es); }

  void exec(int r, int b, int epoch, int launch, int step, const DevStep& st) {
    const size_t ci = st.call;
    const uint32_t e = es(ci);
    uint64_t lo = 0, hi = 0;
    for (uint64_t k = 0; channelChunk(st, e, unit_, channels_, b, k, &lo, &hi); ++k) {
      REQUIRE(lo % e == 0);
      REQUIRE(hi % e == 0);
      const Place dst = place(r, ci, st.dst, r, st.dstOff);
      uint8_t* d = bytes(dst, lo, hi, st.dstOff);
      record(dst, r, b, epoch, launch, step, lo, hi, true);
      if (st.kind == DevStepKind::Reduce) {
        std::vector<const uint8_t*> srcs;
        for (int q = 0; q < n_; ++q) {
          const Place src = place(r, ci, st.src, q, st.srcOff);
          srcs.push_back(bytes(src, lo, hi, st.srcOff));
          record(src, r, b, epoch, launch, step, lo, hi, false);
        }
        for (uint64_t x = lo; x < hi; x += e) {
          uint64_t acc = 0;
          for (const uint8_t* s : srcs) acc += get(s + x, e);
          put(d + x, acc, e);
        }
      } else {
        const Place src = place(r, ci, st.src, st.srcRank, st.srcOff);
        const uint8_t* s = bytes(src, lo, hi, st.srcOff);
        record(src, r, b, epoch, launch, step, lo, hi, false);
        const bool pre = st.kind == DevStepKind::Stage && calls_[ci].premul;
        for (uint64_t x = lo; x < hi; x += e) put(d + x, pre ? get(s + x, e) * 3 : get(s + x, e), e);
      }
    }
  }

  // rank q's initial send element j of call i.
  uint64_t sent(size_t i, int q, uint64_t j) const {
    return get(initialUser_[q][i].data() + sendOff(i, q) + j * es(i), es(i));
  }
  uint64_t contribution(size_t i, int q, uint64_t j) const {
    const uint64_t v = sent(i, q, j);
    return calls_[i].premul ? v * 3 : v;
  }

  void checkCall(size_t i, int r) const {
    const uint32_t e = es(i);
    const uint64_t mask = e == 8 ? ~0ull : (1ull << (8 * e)) - 1;
    const uint8_t* recv = user_[r][i].data() + recvOff(i, r);
    auto got = [&](uint64_t j) { return get(recv + j * e, e); };
    INFO("call " << i << " kind " << static_cast<int>(kind(i)) << " rank " << r << " count " << count(i) << " es " << e
                 << " inPlace " << calls_[i].inPlace << " premul " << calls_[i].premul);
    const int root = calls_[i].c.root;
    for (uint64_t j = 0; j < count(i); ++j) {
      switch (kind(i)) {
        case CollKind::AllReduce:
        case CollKind::Reduce: {
          if (kind(i) == CollKind::Reduce && r != root) break;
          uint64_t want = 0;
          for (int q = 0; q < n_; ++q) want += contribution(i, q, j);
          REQUIRE(got(j) == (want & mask));
          break;
        }
        case CollKind::ReduceScatter: {
          uint64_t want = 0;
          for (int q = 0; q < n_; ++q) want += contribution(i, q, static_cast<uint64_t>(r) * count(i) + j);
          REQUIRE(got(j) == (want & mask));
          break;
        }
        case CollKind::AllGather:
          for (int q = 0; q < n_; ++q) REQUIRE(get(recv + (q * count(i) + j) * e, e) == sent(i, q, j));
          break;
        case CollKind::Broadcast: REQUIRE(got(j) == sent(i, root, j)); break;
        default: FAIL("unexpected kind");
      }
    }
    if (!calls_[i].inPlace) {  // the input is untouched
      const uint64_t sb = sendBytes(i, r);
      REQUIRE((sb == 0 || std::memcmp(user_[r][i].data(), initialUser_[r][i].data(), sb) == 0));
    }
  }

  int n_, channels_;
  size_t region_;
  std::vector<SimCall> calls_;
  size_t maxSteps_;
  uint64_t unit_ = 0;
  std::vector<std::vector<DevStep>> programs_;
  std::vector<size_t> ends_;
  std::vector<std::vector<std::vector<uint8_t>>> user_, initialUser_;
  std::vector<std::vector<uint8_t>> input_, result_;
  std::map<std::tuple<int, int, int>, std::vector<Access>> accesses_;
};

SimCall simCall(CollKind k, uint64_t count, uint32_t es, int root = 0, bool inPlace = false, bool premul = false) {
  SimCall s;
  s.c.kind = k;
  s.c.count = count;
  s.c.elemSize = es;
  s.c.root = root;
  s.inPlace = inPlace;
  s.premul = premul;
  return s;
}

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
  REQUIRE(programUnit(256 << 20, 66) == 32 << 10);
  REQUIRE(programUnit(1 << 20, 32) == 32 << 10);
  REQUIRE(programUnit(1 << 20, 64) == 16 << 10);
  REQUIRE(programUnit(4096, 8) == 1 << 10);
}
