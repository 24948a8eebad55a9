// The one-launch kernels — flag-based (small_allreduce.cu, also a group's
// fused segments) and LL (ll_allreduce.cu) — compiled for the host and run
// with one process per rank (one_launch_emu_{small,ll}.cc): every rank's
// control block, slots and LL buffers live in one shared mapping made
// before fork, each process runs its kernels as one block of host threads,
// and the ranks meet through the kernels' own flags and LL lines.  Several
// calls in a row check the slot and buffer alternation and the LL epochs
// (a longer call's stale lines before a shorter one); results are compared
// bit for bit with the host reduction kernels in rank order.  A rank that
// never arrives and ranks that call with different counts are reported in
// the error record like on a GPU, also when the ranks run the call in
// different kernels.  No substitute for tests/gpu.
#include <catch2/catch.hpp>

#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "device/ll_allreduce.h"
#include "device/small_allreduce.h"
#include "emu_values.h"
#include "p2p/peer_barrier.h"

using coll::device::kLlSlotBytes;
using coll::device::SmallAllReduceArgs;
using coll::device::SmallSeg;
using coll::kernels::DType;
using coll::kernels::Op;
using coll::kernels::ReduceFn;

namespace {

constexpr size_t kSlotBytes = 32 << 10;  // DeviceComm's small slot
constexpr int kMaxRanks = 4;

// One MAP_SHARED mapping: what every rank process sees at the same address.
class Shared {
 public:
  explicit Shared(size_t bytes) : bytes_(bytes) {
    p_ = static_cast<unsigned char*>(mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0));
    REQUIRE(p_ != MAP_FAILED);
  }
  ~Shared() { munmap(p_, bytes_); }
  Shared(const Shared&) = delete;
  Shared& operator=(const Shared&) = delete;
  unsigned char* take(size_t bytes) {
    used_ = (used_ + 255) / 256 * 256;
    REQUIRE(used_ + bytes <= bytes_);
    unsigned char* p = p_ + used_;
    used_ += bytes;
    return p;
  }

 private:
  size_t bytes_, used_ = 0;
  unsigned char* p_;
};

struct Call {
  bool reduce = false;  // else all-reduce
  int root = 0;
  size_t count = 0;
  ReduceFn fn;
  bool inPlace = false;
  bool deviceScalar = false;
};

size_t es(DType d) { return coll::kernels::dtypeSize(d); }


class World {
 public:
  World(int n, std::vector<Call> calls, uint64_t seed) : n_(n), calls_(std::move(calls)), mem_(64 << 20) {
    REQUIRE(n <= kMaxRanks);
    for (int r = 0; r < n; ++r) {
      control_.push_back(reinterpret_cast<unsigned long long*>(mem_.take(256)));
      small_.push_back(reinterpret_cast<char*>(mem_.take(2 * kSlotBytes)));
      ll_.push_back(reinterpret_cast<char*>(mem_.take(2 * kLlSlotBytes)));
      errors_.push_back(reinterpret_cast<unsigned long long*>(mem_.take(coll::p2p::kErrorWords * 8)));
    }
    std::mt19937_64 rng(seed);
    for (const Call& c : calls_) {
      send_.emplace_back();
      recv_.emplace_back();
      scalar_.emplace_back();
      initial_.emplace_back();
      for (int r = 0; r < n; ++r) {
        const size_t bytes = c.count * es(c.fn.dtype);
        unsigned char* s = mem_.take(bytes + 16);
        for (size_t i = 0; i < bytes; ++i) s[i] = static_cast<unsigned char>(rng());
        initial_.back().emplace_back(s, s + bytes);
        send_.back().push_back(s);
        recv_.back().push_back(c.inPlace ? s : mem_.take(bytes + 16));
        unsigned char* sc = mem_.take(8);
        coll::emutest::storeTestScalar(c.fn.dtype, sc);
        scalar_.back().push_back(sc);
      }
    }
  }

  // Each rank a process: call i of every rank as `mode` (0 flag-based one
  // launch, 1 LL, 2 all calls as one fused launch; or as setMode said for
  // that rank), unless skipped (bit r of skipRanks: rank r exits without
  // calling).
  void run(int mode, unsigned long long timeoutNs = 5'000'000'000ull, unsigned long long skipRanks = 0) {
    std::vector<pid_t> kids;
    for (int r = 0; r < n_; ++r) {
      const pid_t pid = fork();
      REQUIRE(pid >= 0);
      if (pid == 0) {
        alarm(120);  // a hung kernel fails the test instead of hanging it
        _exit((skipRanks >> r) & 1 ? 0 : rankMain(r, modeOf_[r] >= 0 ? modeOf_[r] : mode, timeoutNs));
      }
      kids.push_back(pid);
    }
    for (pid_t pid : kids) {
      int status = 0;
      REQUIRE(waitpid(pid, &status, 0) == pid);
      INFO("rank process status " << status);
      REQUIRE(WIFEXITED(status));
      REQUIRE(WEXITSTATUS(status) == 0);
    }
  }

  unsigned long long error(int r) const { return errors_[r][0]; }
  // The ranks rank r's timeout record names (ranks 0..63).
  unsigned long long stuckRanks(int r) const { return errors_[r][coll::p2p::kStuckWord]; }
  // Rank r's calls carry `count` in their signature (their data is as given).
  void claimCount(int r, size_t count) { claimed_[r] = count; }
  // Rank r runs its calls as `mode` whatever run() says.
  void setMode(int r, int mode) { modeOf_[r] = mode; }

  std::string check() const {
    for (size_t i = 0; i < calls_.size(); ++i) {
      const Call& c = calls_[i];
      const std::vector<unsigned char> want = reference(i);
      for (int r = 0; r < n_; ++r) {
        if (c.reduce && r != c.root) continue;
        if (std::memcmp(recv_[i][r], want.data(), want.size()) != 0) {
          size_t k = 0;
          while (recv_[i][r][k] == want[k]) ++k;
          return "call " + std::to_string(i) + " (" + coll::kernels::dtypeName(c.fn.dtype) + " " +
                 coll::kernels::opName(c.fn.op) + ", count " + std::to_string(c.count) + ") rank " +
                 std::to_string(r) + ": byte " + std::to_string(k) + " is " + std::to_string(recv_[i][r][k]) +
                 ", want " + std::to_string(want[k]);
        }
      }
    }
    return "";
  }

 private:
  SmallAllReduceArgs args(size_t i, int r, bool ll, unsigned long long timeoutNs) const {
    const Call& c = calls_[i];
    SmallAllReduceArgs a;
    a.send = send_[i][r];
    a.recv = c.reduce && r != c.root ? nullptr : recv_[i][r];  // NULL is allowed off the root
    a.count = c.count;
    a.fn = c.fn;
    a.deviceScalar = c.deviceScalar ? scalar_[i][r] : nullptr;
    a.slots = ll ? ll_.data() : small_.data();
    a.slotBytes = ll ? kLlSlotBytes : kSlotBytes;
    a.counter = control_[r] + coll::p2p::kCounterWord;
    a.flags = control_.data();
    a.nranks = n_;
    a.rank = r;
    a.timeoutNs = timeoutNs;
    a.error = errors_[r];
    a.sig.word = static_cast<unsigned long long>(i) << coll::p2p::kSigSeqShift | 0x100;  // call number i
    a.sig.count = claimed_[r] != 0 ? claimed_[r] : c.count;
    return a;
  }

  int rankMain(int r, int mode, unsigned long long timeoutNs) const {
    if (mode == 2) {  // one fused launch: segments at 16-byte aligned offsets of the slot
      std::vector<SmallSeg> segs;
      size_t at = 0, total = 0;
      for (size_t i = 0; i < calls_.size(); ++i) {
        SmallSeg s;
        s.send = send_[i][r];
        s.recv = calls_[i].reduce && r != calls_[i].root ? nullptr : recv_[i][r];
        s.count = calls_[i].count;
        s.offset = at / es(calls_[i].fn.dtype);
        at += (calls_[i].count * es(calls_[i].fn.dtype) + 15) / 16 * 16;
        total += calls_[i].count;
        segs.push_back(s);
      }
      SmallAllReduceArgs a = args(0, r, false, timeoutNs);
      a.sig.count = total;
      return coll::device::launchSmallAllReduceGroup(a, segs.data(), static_cast<int>(segs.size()), nullptr) ==
                     cudaSuccess
                 ? 0
                 : 3;
    }
    for (size_t i = 0; i < calls_.size(); ++i) {
      const SmallAllReduceArgs a = args(i, r, mode == 1, timeoutNs);
      const cudaError_t e = mode == 1 ? coll::device::launchLlAllReduce(a, nullptr)
                                      : coll::device::launchSmallAllReduce(a, nullptr);
      if (e != cudaSuccess) return 3;
    }
    return 0;
  }

  // post(pre(s0) op pre(s1) op ...) in rank order, rounded after each step.
  std::vector<unsigned char> reference(size_t i) const {
    const Call& c = calls_[i];
    const ReduceFn f = c.deviceScalar ? coll::emutest::withTestScalar(c.fn) : c.fn;
    auto staged = [&](int q) {
      std::vector<unsigned char> out(c.count * es(c.fn.dtype));
      coll::kernels::reduce(f, out.data(), nullptr, initial_[i][q].data(), c.count, true, false);
      return out;
    };
    std::vector<unsigned char> acc = staged(0);
    if (n_ == 1) coll::kernels::reduce(f, acc.data(), nullptr, acc.data(), c.count, false, true);
    for (int q = 1; q < n_; ++q) {
      const std::vector<unsigned char> s = staged(q);
      coll::kernels::reduce(f, acc.data(), acc.data(), s.data(), c.count, false, q == n_ - 1);
    }
    return acc;
  }

  int n_;
  std::vector<Call> calls_;
  size_t claimed_[kMaxRanks] = {};
  int modeOf_[kMaxRanks] = {-1, -1, -1, -1};
  Shared mem_;
  std::vector<unsigned long long*> control_, errors_;
  std::vector<char*> small_, ll_;
  std::vector<std::vector<unsigned char*>> send_, recv_, scalar_;
  std::vector<std::vector<std::vector<unsigned char>>> initial_;
};

Call make(DType d, int variant, size_t count, int n) {
  Call c;
  c.count = count;
  c.fn.dtype = d;
  c.fn.op = variant < 4 ? static_cast<Op>(variant) : Op::Sum;
  if (variant == 4) c.fn.divisor = static_cast<uint64_t>(n);  // avg
  if (variant >= 5) {
    c.fn.premul = true;
    c.fn = coll::emutest::withTestScalar(c.fn);
    c.deviceScalar = variant == 6;
  }
  c.inPlace = variant % 2 == 0;
  return c;
}


void runAndCheck(World& w, int n, int mode) {
  w.run(mode);
  for (int r = 0; r < n; ++r) {
    INFO("rank " << r << " error word " << w.error(r));
    REQUIRE(w.error(r) == 0);
  }
  const std::string diff = w.check();
  INFO(diff);
  REQUIRE(diff.empty());
}

}  // namespace

TEST_CASE("one-launch kernels (emulated): every dtype, op, avg, pre-mul; calls in a row", "[device_emu]") {
  uint64_t seed = 1;
  for (int mode : {0, 1})  // flag-based, LL
    for (int n : {2, 3})
      for (DType d : coll::emutest::kAllDTypes) {
        // Seven calls in a row (every op variant), counts falling and
        // rising so a shorter call follows a longer one in the same buffer.
        std::vector<Call> calls;
        const size_t maxCount = (16 << 10) / es(d);
        const size_t counts[] = {maxCount, 3, maxCount / 2 + 1, 1, 1031 % maxCount + 1, 64, 7};
        for (int v = 0; v < 7; ++v) calls.push_back(make(d, v, counts[v], n));
        calls[3].reduce = true;  // a reduce, its non-roots passing NULL
        calls[3].root = n - 1;
        INFO((mode ? "LL" : "flag") << " n " << n << " " << coll::kernels::dtypeName(d));
        World w(n, calls, ++seed);
        runAndCheck(w, n, mode);
      }
}

TEST_CASE("one-launch kernel (emulated): a group's calls fused in one launch", "[device_emu]") {
  for (int n : {2, 4}) {
    std::vector<Call> calls;
    for (size_t count : {1, 7, 100, 1031, 3}) calls.push_back(make(DType::Float32, 0, count, n));
    calls[2].reduce = true;
    calls[2].root = n - 1;
    calls[2].inPlace = false;
    INFO("n " << n);
    World w(n, calls, 77 + n);
    runAndCheck(w, n, 2);
  }
}

TEST_CASE("one-launch kernels (emulated): a rank that never comes, calls that differ", "[device_emu]") {
  for (int mode : {0, 1}) {
    INFO((mode ? "LL" : "flag"));
    World w(2, {make(DType::Float32, 0, 100, 2)}, 5);
    const auto t0 = std::chrono::steady_clock::now();
    w.run(mode, 200'000'000ull, 1ull << 1);  // rank 1 exits without calling
    CHECK(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() < 5.0);
    CHECK(w.error(0) == ((coll::p2p::kErrTimeout << 32) | 2ull));
    CHECK(w.stuckRanks(0) == 1ull << 1);
  }
  // Ranks 1 and 3 of 4 never come: every waiting rank names both, whichever
  // of its threads (one per absent rank here) gave up first.
  for (int mode : {0, 1}) {
    INFO((mode ? "LL" : "flag"));
    World w(4, {make(DType::Float32, 0, 100, 4)}, 8);
    w.run(mode, 200'000'000ull, (1ull << 1) | (1ull << 3));
    for (int r : {0, 2}) {
      INFO("rank " << r);
      CHECK(w.error(r) == ((coll::p2p::kErrTimeout << 32) | 2ull));  // the lowest, rank 1 (+1)
      CHECK(w.stuckRanks(r) == ((1ull << 1) | (1ull << 3)));
    }
  }
  for (int mode : {0, 1}) {
    INFO((mode ? "LL" : "flag"));
    World w(2, {make(DType::Float32, 0, 100, 2)}, 6);
    w.claimCount(1, 99);  // rank 1 says it called with count 99
    w.run(mode);
    CHECK(w.error(0) == ((coll::p2p::kErrMismatch << 32) | 2ull));  // rank 1 (+1)
    CHECK(w.error(1) == ((coll::p2p::kErrMismatch << 32) | 1ull));  // rank 0 (+1)
  }
}

TEST_CASE("one-launch kernels (emulated): ranks in different kernels for one call", "[device_emu]") {
  // Rank 0 runs the call in the LL kernel, rank 1 (which says it has
  // another count, as a count past COLL_DEVICE_LL_BYTES would) in the
  // flag-based one: neither arrives where the other waits, and each finds
  // the other's call announced with other arguments long before the 5 s
  // timeout.
  for (int llRank : {0, 1}) {
    INFO("LL on rank " << llRank);
    World w(2, {make(DType::Float32, 0, 100, 2)}, 9);
    w.claimCount(1, 5000);
    w.setMode(llRank, 1);
    w.setMode(1 - llRank, 0);
    const auto t0 = std::chrono::steady_clock::now();
    w.run(0);
    CHECK(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() < 2.5);
    CHECK(w.error(0) == ((coll::p2p::kErrMismatch << 32) | 2ull));
    CHECK(w.error(1) == ((coll::p2p::kErrMismatch << 32) | 1ull));
  }
}
