// device_program_sim.cc — see device_program_sim.h.
#include "device_program_sim.h"

#include <catch2/catch.hpp>

#include <algorithm>
#include <cstring>
#include <random>

#include "schedule/call_memory.h"

namespace devsim {

using coll::sched::appendDeviceProgram;
using coll::sched::channelChunk;
using coll::sched::DevStepKind;
using coll::sched::programUnit;
using coll::sched::splitProgram;

namespace {

uint64_t get(const uint8_t* p, uint32_t es) {
  uint64_t v = 0;
  std::memcpy(&v, p, es);
  return v;
}
void put(uint8_t* p, uint64_t v, uint32_t es) { std::memcpy(p, &v, es); }

// A user buffer's made-up address for call_memory.h: buffers of one rank
// never overlap, and offsets inside one keep their order.
const void* fakeAddress(int buf, uint64_t off) {
  return reinterpret_cast<const void*>((static_cast<uintptr_t>(buf) + 1) << 32 | static_cast<uintptr_t>(off));
}

}  // namespace

SimCall simCall(CollKind k, uint64_t count, uint32_t es, int root, bool inPlace, bool premul) {
  SimCall s;
  s.c.kind = k;
  s.c.count = count;
  s.c.elemSize = es;
  s.c.root = root;
  s.inPlace = inPlace;
  s.premul = premul;
  return s;
}

Job::Job(int n, int channels, size_t regionBytes, size_t oneShot, size_t maxSteps, std::vector<SimCall> calls,
         bool cutDependent)
    : n_(n), channels_(channels), region_(regionBytes), calls_(std::move(calls)), maxSteps_(maxSteps),
      cutDependent_(cutDependent) {
  uint64_t maxPiece = 0;
  for (const SimCall& sc : calls_)
    maxPiece = std::max<uint64_t>(maxPiece, std::min<uint64_t>(region_, sc.c.count * sc.c.elemSize));
  unit_ = programUnit(maxPiece, channels_);
  for (int r = 0; r < n_; ++r) {
    std::vector<DevStep> prog;
    std::vector<size_t> first;
    for (size_t i = 0; i < calls_.size(); ++i) {
      first.push_back(prog.size());
      REQUIRE(appendDeviceProgram(prog, calls_[i].c, static_cast<uint8_t>(i), r, n_, region_, oneShot));
    }
    programs_.push_back(std::move(prog));
    firstStep_.push_back(std::move(first));
  }
  user_.resize(static_cast<size_t>(n_));
  placeBuffers(sendLoc_, recvLoc_);
  std::mt19937_64 rng(12345 + n * 7 + channels);
  for (auto& rankBufs : user_)
    for (auto& buf : rankBufs)
      for (auto& b : buf) b = static_cast<uint8_t>(rng());
  initialUser_ = user_;
  for (int r = 0; r < n_; ++r) {
    input_.emplace_back(region_);
    result_.emplace_back(region_);
    const std::vector<DevStep>& prog = programs_[static_cast<size_t>(r)];
    ends_.push_back(prog.empty() ? std::vector<size_t>{} : splitProgram(prog, maxSteps, launchStarts(r)));
    if (!prog.empty()) REQUIRE(!ends_.back().empty());
    std::vector<int> launchOf;  // of each epoch: the launch holding its barrier
    size_t launch = 0;
    for (size_t s = 0; s < prog.size(); ++s) {
      while (launch < ends_.back().size() && s >= ends_.back()[launch]) ++launch;
      if (prog[s].kind == DevStepKind::Barrier) launchOf.push_back(static_cast<int>(launch));
    }
    launchOfEpoch_.push_back(std::move(launchOf));
  }
}

uint64_t Job::sendBytes(size_t i, int r) const {
  if (kind(i) == CollKind::Broadcast && r != calls_[i].c.root) return 0;  // NULL allowed
  return count(i) * es(i) * (kind(i) == CollKind::ReduceScatter ? n_ : 1);
}

uint64_t Job::recvBytes(size_t i, int r) const {
  if (kind(i) == CollKind::Reduce && r != calls_[i].c.root) return 0;  // NULL allowed
  return count(i) * es(i) * (kind(i) == CollKind::AllGather ? n_ : 1);
}

void Job::placeBuffers(std::vector<std::vector<Loc>>& send, std::vector<std::vector<Loc>>& recv) {
  send.assign(static_cast<size_t>(n_), {});
  recv.assign(static_cast<size_t>(n_), {});
  for (int r = 0; r < n_; ++r) {
    auto& bufs = user_[static_cast<size_t>(r)];
    auto& sl = send[static_cast<size_t>(r)];
    auto& rl = recv[static_cast<size_t>(r)];
    auto fresh = [&](uint64_t bytes) {
      bufs.emplace_back(bytes);
      return static_cast<int>(bufs.size() - 1);
    };
    auto alias = [&](const BufferUse& u) {
      REQUIRE(u.call >= 0);
      REQUIRE(static_cast<size_t>(u.call) < sl.size());
      return u.recv ? rl[static_cast<size_t>(u.call)] : sl[static_cast<size_t>(u.call)];
    };
    for (size_t i = 0; i < calls_.size(); ++i) {
      const SimCall& c = calls_[i];
      const uint64_t s = count(i) * es(i);
      if (c.send.call < 0 && c.recv.call < 0 && c.inPlace) {
        // One buffer: an all-gather sends from its own block of the
        // output, a reduce-scatter receives into its own block of the input.
        const bool gathered = kind(i) == CollKind::AllGather || kind(i) == CollKind::ReduceScatter;
        const int b = fresh(s * (gathered ? n_ : 1));
        const uint64_t mine = static_cast<uint64_t>(r) * s;
        sl.push_back({b, kind(i) == CollKind::AllGather ? mine : 0});
        rl.push_back({b, kind(i) == CollKind::ReduceScatter ? mine : 0});
        continue;
      }
      sl.push_back(c.send.call < 0 ? Loc{fresh(sendBytes(i, r)), 0} : alias(c.send));
      rl.push_back(c.recv.call < 0 ? Loc{fresh(recvBytes(i, r)), 0} : alias(c.recv));
    }
  }
}

std::vector<size_t> Job::launchStarts(int r) const {
  if (!cutDependent_) return {};
  std::vector<coll::sched::CallMemory> memory;
  for (size_t i = 0; i < calls_.size(); ++i) {
    const Loc s = sendLoc_[static_cast<size_t>(r)][i], d = recvLoc_[static_cast<size_t>(r)][i];
    memory.push_back(coll::sched::callMemory(kind(i), count(i), es(i), calls_[i].c.root, r, n_,
                                             fakeAddress(s.buf, s.off), fakeAddress(d.buf, d.off), nullptr));
  }
  std::vector<size_t> starts;
  for (size_t call : coll::sched::dependentCalls(memory)) starts.push_back(firstStep_[static_cast<size_t>(r)][call]);
  return starts;
}

void Job::checkShapes() const {
  const std::vector<DevStep>& p0 = programs_[0];
  for (int r = 1; r < n_; ++r) {
    const std::vector<DevStep>& p = programs_[static_cast<size_t>(r)];
    REQUIRE(p.size() == p0.size());
    for (size_t i = 0; i < p0.size(); ++i)
      REQUIRE((p[i].kind == DevStepKind::Barrier) == (p0[i].kind == DevStepKind::Barrier));
    if (!p0.empty()) REQUIRE(splitProgram(p, maxSteps_) == splitProgram(p0, maxSteps_));
  }
  if (!p0.empty()) REQUIRE(p0.back().kind == DevStepKind::Barrier);
}

void Job::run(uint64_t seed) {
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
    for (auto [r, b] : order)
      for (size_t s = i; s < end; ++s) exec(r, b, epoch, static_cast<int>(s), programs_[static_cast<size_t>(r)][s]);
    i = end + 1;  // past the barrier
    ++epoch;
  }
}

std::string Job::race() const {
  for (const auto& [key, list] : accesses_) {
    std::vector<Access> a = list;
    std::sort(a.begin(), a.end(), [](const Access& x, const Access& y) { return x.lo < y.lo; });
    for (size_t i = 0; i < a.size(); ++i)
      for (size_t j = i + 1; j < a.size() && a[j].lo < a[i].hi; ++j) {
        const Access &x = a[i], &y = a[j];
        if (!x.write && !y.write) continue;
        if (x.rank == y.rank && x.block == y.block && (x.epoch != y.epoch || x.step == y.step)) continue;
        if (x.block == y.block && x.epoch != y.epoch) continue;
        // A launch boundary between the two epochs on either rank: every
        // block of that rank finished the earlier launch (past barriers
        // that every rank's same block reached) before any started the next.
        if (launchAt(x.rank, x.epoch) != launchAt(x.rank, y.epoch) ||
            launchAt(y.rank, x.epoch) != launchAt(y.rank, y.epoch))
          continue;
        return "space (" + std::to_string(std::get<0>(key)) + "," + std::to_string(std::get<1>(key)) + "," +
               std::to_string(std::get<2>(key)) + ") bytes " + std::to_string(std::max(x.lo, y.lo)) + ": rank " +
               std::to_string(x.rank) + " block " + std::to_string(x.block) + " epoch " + std::to_string(x.epoch) +
               (x.write ? " writes" : " reads") + ", rank " + std::to_string(y.rank) + " block " +
               std::to_string(y.block) + " epoch " + std::to_string(y.epoch) + (y.write ? " writes" : " reads");
      }
  }
  return "";
}

void Job::checkResults() const {
  auto want = initialUser_;
  reference(want);
  for (int r = 0; r < n_; ++r)
    for (size_t b = 0; b < want[static_cast<size_t>(r)].size(); ++b) {
      const std::vector<uint8_t>& got = user_[static_cast<size_t>(r)][b];
      const std::vector<uint8_t>& w = want[static_cast<size_t>(r)][b];
      const auto diff = std::mismatch(got.begin(), got.end(), w.begin());
      INFO("rank " << r << " user buffer " << b << " (" << got.size() << " B) differs at byte "
                   << (diff.first - got.begin()));
      REQUIRE(got == w);
    }
}

void Job::reference(std::vector<std::vector<std::vector<uint8_t>>>& mem) const {
  for (size_t i = 0; i < calls_.size(); ++i) {
    const uint32_t e = es(i);
    const uint64_t c = count(i);
    const int root = calls_[i].c.root;
    auto sendAt = [&](int q, uint64_t j) {
      const Loc l = sendLoc_[static_cast<size_t>(q)][i];
      const uint64_t v = get(mem[static_cast<size_t>(q)][static_cast<size_t>(l.buf)].data() + l.off + j * e, e);
      return calls_[i].premul ? v * 3 : v;
    };
    auto sum = [&](uint64_t j) {
      uint64_t acc = 0;
      for (int q = 0; q < n_; ++q) acc += sendAt(q, j);
      return acc;
    };
    // Every rank's output computed before any is written (in place).
    std::vector<std::vector<uint64_t>> out(static_cast<size_t>(n_));
    for (int r = 0; r < n_; ++r) {
      std::vector<uint64_t>& o = out[static_cast<size_t>(r)];
      switch (kind(i)) {
        case CollKind::AllReduce:
          for (uint64_t j = 0; j < c; ++j) o.push_back(sum(j));
          break;
        case CollKind::Reduce:
          if (r == root)
            for (uint64_t j = 0; j < c; ++j) o.push_back(sum(j));
          break;
        case CollKind::ReduceScatter:
          for (uint64_t j = 0; j < c; ++j) o.push_back(sum(static_cast<uint64_t>(r) * c + j));
          break;
        case CollKind::AllGather:
          for (int q = 0; q < n_; ++q)
            for (uint64_t j = 0; j < c; ++j) o.push_back(sendAt(q, j));
          break;
        case CollKind::Broadcast:
          for (uint64_t j = 0; j < c; ++j) o.push_back(sendAt(root, j));
          break;
        default: FAIL("unexpected kind");
      }
    }
    for (int r = 0; r < n_; ++r) {
      const Loc l = recvLoc_[static_cast<size_t>(r)][i];
      uint8_t* d = mem[static_cast<size_t>(r)][static_cast<size_t>(l.buf)].data() + l.off;
      const std::vector<uint64_t>& o = out[static_cast<size_t>(r)];
      for (size_t j = 0; j < o.size(); ++j) put(d + j * e, o[j], e);
    }
  }
}

Job::Place Job::place(int rank, size_t call, DevBuf b, int srcRank, uint64_t off) const {
  switch (b) {
    case DevBuf::Send: {
      const Loc l = sendLoc_[static_cast<size_t>(rank)][call];
      return {rank, kUser, l.buf, l.off + off, sendBytes(call, rank)};
    }
    case DevBuf::Recv: {
      const Loc l = recvLoc_[static_cast<size_t>(rank)][call];
      return {rank, kUser, l.buf, l.off + off, recvBytes(call, rank)};
    }
    case DevBuf::Input: return {srcRank, kInput, -1, off, region_};
    case DevBuf::Result: return {srcRank, kResult, -1, off, region_};
  }
  return {};
}

uint8_t* Job::bytes(const Place& p, uint64_t lo, uint64_t hi, uint64_t logicalOff) {
  INFO("owner " << p.owner << " space " << p.space << " buffer " << p.buf << " at " << logicalOff + lo << ".."
                << logicalOff + hi << " of " << p.size);
  REQUIRE(p.owner >= 0);
  REQUIRE(p.owner < n_);
  REQUIRE(logicalOff + hi <= p.size);
  std::vector<uint8_t>& v = p.space == kUser    ? user_[static_cast<size_t>(p.owner)][static_cast<size_t>(p.buf)]
                            : p.space == kInput ? input_[static_cast<size_t>(p.owner)]
                                                : result_[static_cast<size_t>(p.owner)];
  REQUIRE(p.off + hi <= v.size());
  return v.data() + p.off;
}

void Job::record(const Place& p, int rank, int block, int epoch, int step, uint64_t lo, uint64_t hi, bool write) {
  accesses_[{p.owner, p.space, p.buf}].push_back({rank, block, epoch, step, p.off + lo, p.off + hi, write});
}

void Job::exec(int r, int b, int epoch, int step, const DevStep& st) {
  const size_t ci = st.call;
  const uint32_t e = es(ci);
  uint64_t lo = 0, hi = 0;
  for (uint64_t k = 0; channelChunk(st, e, unit_, channels_, b, k, &lo, &hi); ++k) {
    REQUIRE(lo % e == 0);
    REQUIRE(hi % e == 0);
    const Place dst = place(r, ci, st.dst, r, st.dstOff);
    uint8_t* d = bytes(dst, lo, hi, st.dstOff);
    if (st.kind == DevStepKind::Reduce) {
      std::vector<const uint8_t*> srcs;
      for (int q = 0; q < n_; ++q) {
        const Place src = place(r, ci, st.src, q, st.srcOff);
        srcs.push_back(bytes(src, lo, hi, st.srcOff));
        record(src, r, b, epoch, step, lo, hi, false);
      }
      for (uint64_t x = lo; x < hi; x += e) {
        uint64_t acc = 0;
        for (const uint8_t* s : srcs) acc += get(s + x, e);
        put(d + x, acc, e);
      }
    } else {
      const Place src = place(r, ci, st.src, st.srcRank, st.srcOff);
      const uint8_t* s = bytes(src, lo, hi, st.srcOff);
      record(src, r, b, epoch, step, lo, hi, false);
      const bool pre = st.kind == DevStepKind::Stage && calls_[ci].premul;
      for (uint64_t x = lo; x < hi; x += e) put(d + x, pre ? get(s + x, e) * 3 : get(s + x, e), e);
    }
    record(dst, r, b, epoch, step, lo, hi, true);
  }
}

}  // namespace devsim
