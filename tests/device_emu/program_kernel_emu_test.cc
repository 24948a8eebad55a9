// The program kernel (libcoll/src/device/program_kernel.cu) compiled for
// the host and run on host memory: each rank's launches come from
// buildProgramLaunches (what DeviceComm launches), each block is a few host
// threads (cuda_emulation.h), and all ranks run at once, meeting at the
// kernel's own flag barriers.  Results are compared bit for bit with the
// host reduction kernels applied in rank order.  Covers every dtype and op,
// avg and pre-multiplication (host and device scalar), every collective,
// in and out of place, user buffers off the 16-byte grid, one-shot and
// two-phase all-reduce pieces, groups cut into several launches, and the
// failure paths (a rank that never arrives; calls that differ).  It is no
// substitute for running on a GPU (memory model, residency, speed), which
// tests/gpu does.
#include "cuda_emulation.h"

#include "device/program_kernel.cu"  // the kernel itself, compiled here

#include <catch2/catch.hpp>

#include <cstring>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "device/program_launch.h"
#include "emu_values.h"

using coll::device::buildProgramLaunches;
using coll::device::kChannelStride;
using coll::device::kMaxChannels;
using coll::device::ProgramLaunch;
using coll::device::DeviceOp;
using coll::device::ProgramPlace;
using coll::kernels::DType;
using coll::kernels::Op;
using coll::kernels::ReduceFn;
using coll::sched::CollKind;

namespace {

constexpr size_t kControl = 256;

// A 16-byte aligned byte buffer.
struct Buf {
  std::vector<unsigned char> raw;
  unsigned char* p = nullptr;
  Buf() = default;
  Buf(size_t bytes, size_t offset) : raw(bytes + 32 + offset) {
    const auto a = reinterpret_cast<uintptr_t>(raw.data());
    p = raw.data() + ((16 - a % 16) % 16) + offset;
  }
};

// N ranks' P2P blocks (control, input region, result region, channel area),
// error records, and the kernel runs.
class Emu {
 public:
  Emu(int n, int channels, size_t region, unsigned long long timeoutNs = 5'000'000'000ull)
      : n_(n), channels_(channels), region_(region), timeoutNs_(timeoutNs), errors_(n) {
    for (int r = 0; r < n; ++r) {
      blocks_.emplace_back(kControl + 2 * region + kMaxChannels * kChannelStride, 0);
      std::memset(blocks_.back().p, 0, kControl + 2 * region + kMaxChannels * kChannelStride);
      bases_.push_back(reinterpret_cast<char*>(blocks_.back().p));
      errors_[r].assign(coll::p2p::kErrorWords, 0);
    }
  }

  ProgramPlace place(int r) {
    ProgramPlace at;
    at.rank = r;
    at.nranks = n_;
    at.channels = channels_;
    at.regionBytes = region_;
    at.bases = bases_.data();
    at.inputOffset = kControl;
    at.resultOffset = kControl + region_;
    at.channelOffset = kControl + 2 * region_;
    at.timeoutNs = timeoutNs_;
    at.error = errors_[r].data();
    at.control = reinterpret_cast<unsigned long long*>(bases_[r]);
    return at;
  }

  // Every rank in `running` runs its launches in order; all at once.
  void run(const std::vector<std::vector<ProgramLaunch>>& launches, std::vector<bool> running = {}) {
    if (running.empty()) running.assign(n_, true);
    std::vector<std::thread> ranks;
    std::atomic<bool> unknownKernel{false};  // (Catch2 asserts on this thread only)
    for (int r = 0; r < n_; ++r) {
      if (!running[r]) continue;
      ranks.emplace_back([&, r] {
        for (const ProgramLaunch& l : launches[r]) {
          auto kernel = coll::device::oneLaunchKernel<coll::device::ProgramKernel>(l.dtype, l.op);
          if (kernel == nullptr) {
            unknownKernel = true;
            return;
          }
          const unsigned threads = coll::emu::blockThreads(dim3(coll::device::kProgramThreads));
          coll::emu::runGrid(static_cast<unsigned>(l.channels), threads, coll::device::programSharedBytes(l.nranks),
                             [&] { kernel(l); });
        }
      });
    }
    for (auto& t : ranks) t.join();
    REQUIRE_FALSE(unknownKernel);
  }

  unsigned long long error(int r) const { return errors_[r][0]; }
  unsigned long long stuckRanks(int r) const { return errors_[r][coll::p2p::kStuckWord]; }  // ranks 0..63

 private:
  int n_, channels_;
  size_t region_;
  unsigned long long timeoutNs_;
  std::vector<Buf> blocks_;
  std::vector<char*> bases_;
  std::vector<std::vector<unsigned long long>> errors_;
};

size_t es(DType d) { return coll::kernels::dtypeSize(d); }

struct Call {
  CollKind kind = CollKind::AllReduce;
  size_t count = 0;
  int root = 0;
  ReduceFn fn;
  bool inPlace = false;
  bool deviceScalar = false;  // the pre-mul scalar from "device" memory
  size_t misalign = 0;        // bytes the user buffers sit off the 16-byte grid
};


// One rank's buffers for one call, laid out as the C API allows (in place:
// recv inside send or the other way round, as NCCL defines it).
struct RankBufs {
  Buf user;
  Buf scalar;
  unsigned char* send = nullptr;
  unsigned char* recv = nullptr;
  std::vector<unsigned char> initial;  // the user memory before the call
  size_t userBytes = 0;
};

class Job {
 public:
  Job(int n, const std::vector<Call>& calls, uint64_t seed) : n_(n), calls_(calls), bufs_(n) {
    std::mt19937_64 rng(seed);
    for (int r = 0; r < n; ++r)
      for (const Call& c : calls) {
        const size_t s = c.count * es(c.fn.dtype), big = s * static_cast<size_t>(n);
        const bool gathered = c.kind == CollKind::AllGather || c.kind == CollKind::ReduceScatter;
        const size_t sendBytes = c.kind == CollKind::ReduceScatter ? big : s;
        const size_t recvBytes = c.kind == CollKind::AllGather ? big : s;
        RankBufs b;
        b.userBytes = c.inPlace ? (gathered ? big : s) : sendBytes + recvBytes;
        b.user = Buf(b.userBytes, c.misalign);
        for (size_t i = 0; i < b.userBytes; ++i) b.user.p[i] = static_cast<unsigned char>(rng());
        if (c.inPlace) {
          b.send = b.user.p + (c.kind == CollKind::AllGather ? static_cast<size_t>(r) * s : 0);
          b.recv = b.user.p + (c.kind == CollKind::ReduceScatter ? static_cast<size_t>(r) * s : 0);
        } else {
          b.send = b.user.p;
          b.recv = b.user.p + sendBytes;
        }
        if (c.deviceScalar) {  // the scalar in storage format, as a device scalar would be
          b.scalar = Buf(8, 0);
          coll::emutest::storeTestScalar(c.fn.dtype, b.scalar.p);
        }
        b.initial.assign(b.user.p, b.user.p + b.userBytes);
        bufs_[r].push_back(std::move(b));
      }
  }

  // Rank r's launches over emu's memory (what DeviceComm would launch).
  coll::Status launches(Emu& emu, int r, std::vector<ProgramLaunch>* out) const {
    std::vector<DeviceOp> ops;
    std::vector<coll::p2p::CallSig> sigs;
    for (size_t i = 0; i < calls_.size(); ++i) {
      const Call& c = calls_[i];
      const RankBufs& b = bufs_[r][i];
      DeviceOp op;
      op.kind = c.kind;
      op.send = b.send;
      op.recv = b.recv;
      op.count = c.count;
      op.root = c.root;
      op.fn = c.fn;
      op.deviceScalar = c.deviceScalar ? b.scalar.p : nullptr;
      ops.push_back(op);
      sigs.push_back({static_cast<unsigned long long>(i) << coll::p2p::kSigSeqShift | 0x100, c.count});  // call number i
    }
    return buildProgramLaunches(emu.place(r), ops.data(), sigs.data(), ops.size(), out);
  }

  // Every rank's output against the reference; "" or the first difference.
  std::string check() const {
    for (size_t i = 0; i < calls_.size(); ++i)
      for (int r = 0; r < n_; ++r) {
        std::string e = checkOne(i, r);
        if (!e.empty()) return e;
      }
    return "";
  }

 private:
  // The bytes a rank staged: pre(send) for a pre-mul call, else send as is.
  std::vector<unsigned char> staged(size_t i, int q, size_t at, size_t n) const {
    const Call& c = calls_[i];
    const size_t e = es(c.fn.dtype);
    const unsigned char* src = bufs_[q][i].initial.data() + (bufs_[q][i].send - bufs_[q][i].user.p) + at * e;
    std::vector<unsigned char> out(src, src + n * e);
    if (c.fn.premul) {
      const ReduceFn f = c.deviceScalar ? coll::emutest::withTestScalar(c.fn) : c.fn;
      coll::kernels::reduce(f, out.data(), nullptr, src, n, true, false);
    }
    return out;
  }
  // post(staged_0 op staged_1 op ...), rounded after every step.
  std::vector<unsigned char> reduced(size_t i, size_t at, size_t n) const {
    std::vector<unsigned char> acc = staged(i, 0, at, n);
    for (int q = 1; q < n_; ++q) {
      const std::vector<unsigned char> s = staged(i, q, at, n);
      coll::kernels::reduce(calls_[i].fn, acc.data(), acc.data(), s.data(), n, false, q == n_ - 1);
    }
    return acc;
  }
  std::string checkOne(size_t i, int r) const {
    const Call& c = calls_[i];
    const RankBufs& b = bufs_[r][i];
    const size_t e = es(c.fn.dtype), s = c.count * e;
    std::vector<unsigned char> want;
    switch (c.kind) {
      case CollKind::AllReduce: want = reduced(i, 0, c.count); break;
      case CollKind::Reduce:
        if (r != c.root) return "";
        want = reduced(i, 0, c.count);
        break;
      case CollKind::ReduceScatter: want = reduced(i, static_cast<size_t>(r) * c.count, c.count); break;
      case CollKind::AllGather:
        for (int q = 0; q < n_; ++q) {
          const unsigned char* src = bufs_[q][i].initial.data() + (bufs_[q][i].send - bufs_[q][i].user.p);
          want.insert(want.end(), src, src + s);
        }
        break;
      case CollKind::Broadcast: {
        const unsigned char* src = bufs_[c.root][i].initial.data() + (bufs_[c.root][i].send - bufs_[c.root][i].user.p);
        want.assign(src, src + s);
        break;
      }
      default: return "unexpected kind";
    }
    if (!want.empty() && std::memcmp(b.recv, want.data(), want.size()) != 0) {
      size_t k = 0;
      while (b.recv[k] == want[k]) ++k;
      return "call " + std::to_string(i) + " (" + coll::sched::collKindName(c.kind) + " " +
             coll::kernels::dtypeName(c.fn.dtype) + " " + coll::kernels::opName(c.fn.op) + ", count " +
             std::to_string(c.count) + (c.inPlace ? ", in place" : "") + ") rank " + std::to_string(r) + ": byte " +
             std::to_string(k) + " is " + std::to_string(b.recv[k]) + ", want " + std::to_string(want[k]);
    }
    if (!c.inPlace && c.kind != CollKind::Broadcast) {  // the input is untouched
      const size_t sendBytes = c.kind == CollKind::ReduceScatter ? s * static_cast<size_t>(n_) : s;
      if (sendBytes != 0 && std::memcmp(b.user.p, b.initial.data(), sendBytes) != 0)
        return "call " + std::to_string(i) + " rank " + std::to_string(r) + ": the send buffer changed";
    }
    return "";
  }

  int n_;
  std::vector<Call> calls_;
  std::vector<std::vector<RankBufs>> bufs_;
};

// Builds every rank's launches for `calls`, runs them and checks.
void runCalls(int n, int channels, size_t region, const std::vector<Call>& calls, uint64_t seed,
              size_t* launchesPerRank = nullptr) {
  Job job(n, calls, seed);
  Emu emu(n, channels, region);
  std::vector<std::vector<ProgramLaunch>> launches(n);
  for (int r = 0; r < n; ++r) {
    const coll::Status st = job.launches(emu, r, &launches[r]);
    INFO(st.message());
    REQUIRE(st.isOk());
    REQUIRE(launches[r].size() == launches[0].size());
  }
  if (launchesPerRank != nullptr) *launchesPerRank = launches[0].size();
  emu.run(launches);
  for (int r = 0; r < n; ++r) {
    INFO("rank " << r);
    REQUIRE(emu.error(r) == 0);
  }
  const std::string diff = job.check();
  INFO(diff);
  REQUIRE(diff.empty());
}

Call allReduce(DType d, Op o, size_t count) {
  Call c;
  c.count = count;
  c.fn.dtype = d;
  c.fn.op = o;
  return c;
}

}  // namespace

TEST_CASE("program kernel (emulated): all-reduce, every dtype and op, avg, pre-mul", "[device_emu]") {
  uint64_t seed = 1;
  for (DType d : coll::emutest::kAllDTypes)
    for (int variant = 0; variant < 7; ++variant) {
      Call c = allReduce(d, variant < 4 ? static_cast<Op>(variant) : Op::Sum, 1031);
      if (variant == 4) c.fn.divisor = 3;  // avg over 3 ranks
      if (variant >= 5) {
        c.fn.premul = true;
        c.fn = coll::emutest::withTestScalar(c.fn);
        c.deviceScalar = variant == 6;
      }
      c.inPlace = variant % 2 == 1;
      INFO(coll::kernels::dtypeName(d) << " variant " << variant);
      // 4 KiB regions: the call runs in pieces, each one-shot.
      runCalls(3, 2, 4096, {c}, ++seed);
    }
}

TEST_CASE("program kernel (emulated): two-phase all-reduce pieces", "[device_emu]") {
  // 512 KiB regions: pieces above 256 KiB reduce-scatter + all-gather, the
  // last (smaller) piece is one-shot.
  uint64_t seed = 100;
  for (int n : {2, 4})
    for (DType d : {DType::Float32, DType::Bfloat16, DType::Int64}) {
      Call c = allReduce(d, Op::Sum, 300001);
      if (d == DType::Bfloat16) c.fn.divisor = static_cast<uint64_t>(n);
      c.inPlace = n == 4;
      INFO("n " << n << " " << coll::kernels::dtypeName(d));
      runCalls(n, 3, 512 << 10, {c}, ++seed);
    }
}

TEST_CASE("program kernel (emulated): every collective, counts, in place, off the 16-byte grid", "[device_emu]") {
  uint64_t seed = 200;
  for (int n : {2, 3})
    for (CollKind k : {CollKind::AllGather, CollKind::Broadcast, CollKind::ReduceScatter, CollKind::Reduce,
                       CollKind::AllReduce})
      for (size_t count : {0, 1, 7, 1031, 5000})
        for (int layout = 0; layout < 3; ++layout) {
          Call c;
          c.kind = k;
          c.count = count;
          c.root = n - 1;
          c.fn.dtype = layout == 2 ? DType::Float16 : DType::Uint8;
          c.fn.op = layout == 2 ? Op::Sum : Op::Max;
          c.inPlace = layout == 1;
          c.misalign = layout == 2 ? 2 : 0;  // element-aligned, not 16-byte aligned
          INFO("n " << n << " " << coll::sched::collKindName(k) << " count " << count << " layout " << layout);
          runCalls(n, 3, 4096, {c}, ++seed);
        }
}

TEST_CASE("program kernel (emulated): a group in one program, cut into launches", "[device_emu]") {
  std::vector<Call> calls;
  calls.push_back(allReduce(DType::Float32, Op::Sum, 100000));  // ~100 pieces of 4 KiB: several launches
  Call ag;
  ag.kind = CollKind::AllGather;
  ag.count = 3001;
  ag.fn.dtype = DType::Float64;
  calls.push_back(ag);
  Call bc;
  bc.kind = CollKind::Broadcast;
  bc.count = 777;
  bc.root = 1;
  bc.fn.dtype = DType::Int8;
  bc.inPlace = true;
  calls.push_back(bc);
  Call rs = allReduce(DType::Float32, Op::Sum, 2049);
  rs.kind = CollKind::ReduceScatter;
  rs.fn.premul = true;
  rs.fn.scalar.f = 0.25;
  calls.push_back(rs);
  calls.push_back(allReduce(DType::Float32, Op::Sum, 5));
  size_t launches = 0;
  runCalls(3, 4, 4096, calls, 7, &launches);
  CHECK(launches > 1);
}

TEST_CASE("program kernel (emulated): a rank that never arrives is named; calls that differ are caught",
          "[device_emu]") {
  SECTION("timeout") {
    Job job(2, {allReduce(DType::Float32, Op::Sum, 70001)}, 1);
    Emu emu(2, 2, 4096, 200'000'000ull);  // 0.2 s
    std::vector<std::vector<ProgramLaunch>> launches(2);
    for (int r = 0; r < 2; ++r) REQUIRE(job.launches(emu, r, &launches[r]).isOk());
    const auto t0 = std::chrono::steady_clock::now();
    emu.run(launches, {true, false});  // rank 1 never runs
    const double sec = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    CHECK(emu.error(0) == ((coll::p2p::kErrTimeout << 32) | 2ull));  // rank 1 (+1)
    CHECK(emu.stuckRanks(0) == 1ull << 1);
    // Every block gives up after one timeout, not one per barrier or launch.
    CHECK(sec < 2.0);
  }
  SECTION("mismatch") {
    std::vector<std::vector<ProgramLaunch>> launches(2);
    Emu emu(2, 2, 4096);
    Job a(2, {allReduce(DType::Float32, Op::Sum, 1031)}, 2), b(2, {allReduce(DType::Float32, Op::Sum, 2000)}, 3);
    REQUIRE(a.launches(emu, 0, &launches[0]).isOk());
    REQUIRE(b.launches(emu, 1, &launches[1]).isOk());
    emu.run(launches);
    for (int r = 0; r < 2; ++r) {
      INFO("rank " << r);
      CHECK(emu.error(r) == ((coll::p2p::kErrMismatch << 32) | static_cast<unsigned long long>(2 - r)));
    }
  }
}

TEST_CASE("program kernel (emulated): block-wide loops with many threads", "[device_emu]") {
  // reduceBlock and copyBlock have no __syncthreads: run them once per
  // thread of a 32-thread block and check the union of the work.
  const int nranks = 3;
  std::mt19937_64 rng(9);
  for (size_t n : {1, 5, 64, 1000, 4099})
    for (size_t off : {0, 4, 12}) {
      std::vector<Buf> regions;
      std::vector<char*> bases;
      for (int r = 0; r < nranks; ++r) {
        regions.emplace_back(n * 4 + 64, 0);
        for (size_t i = 0; i < n * 4 + 64; ++i) regions.back().p[i] = static_cast<unsigned char>(rng() % 7);
        bases.push_back(reinterpret_cast<char*>(regions.back().p));
      }
      Buf dst(n * 4 + 64, 0), copy(n * 4 + 64, 0);
      blockDim.x = 32;
      for (unsigned t = 0; t < 32; ++t) {
        threadIdx.x = t;
        coll::device::reduceBlock<DType::Int32, Op::Sum>(reinterpret_cast<int32_t*>(dst.p + off), bases.data(), off,
                                                         nranks, n, 0);
        coll::device::copyBlock(reinterpret_cast<char*>(copy.p) + off + 1, bases[0] + off, n * 4);
      }
      blockDim.x = 1;
      threadIdx.x = 0;
      for (size_t i = 0; i < n; ++i) {
        int32_t want = 0, got = 0, v = 0;
        for (int r = 0; r < nranks; ++r) {
          std::memcpy(&v, bases[r] + off + i * 4, 4);
          want += v;
        }
        std::memcpy(&got, dst.p + off + i * 4, 4);
        INFO("n " << n << " off " << off << " i " << i);
        REQUIRE(got == want);
      }
      REQUIRE(std::memcmp(copy.p + off + 1, bases[0] + off, n * 4) == 0);
    }
}

TEST_CASE("call tags: the call number where packSignature puts it, the rest hashed", "[device_emu]") {
  // What a rank waiting in vain compares with the call its peer announced
  // (flag_sync.cuh: peerCallDiffers): the same number, another tag.
  coll::exec::Signature s;
  s.coll = coll::sched::CollKind::AllReduce;
  s.count = 100;
  s.dtype = 7;
  s.seq = 12345;
  auto tag = [](const coll::exec::Signature& x) {
    uint64_t w[2];
    REQUIRE(coll::exec::packSignature(x, w));
    CHECK(((w[0] >> coll::p2p::kSigSeqShift) & coll::p2p::kSigSeqMask) == x.seq);
    return coll::p2p::callTag(coll::p2p::CallSig{w[0], w[1]});
  };
  const unsigned long long mine = tag(s);
  CHECK(mine != 0);
  coll::exec::Signature other = s;
  other.count = 5000;
  CHECK(tag(other) != mine);
  CHECK(tag(other) >> 41 == mine >> 41);  // the same call
  other = s;
  other.root = 1;
  CHECK(tag(other) != mine);
  other = s;
  other.seq = 12346;
  CHECK(tag(other) >> 41 != mine >> 41);  // the next call
}
