// device_local_test — libcoll's collectives on CUDA device buffers where
// every rank of the communicator lives in this one process
// (collCommInitAll), rank r on device r % D with a stream of its own, driven
// two ways: one thread issuing every rank's call inside one
// collGroupStart/collGroupEnd, and a thread per rank making its own calls
// ungrouped.  Checked bit for bit against a host reference computed with
// coll::kernels::reduce() in rank order (as device_coll_test.cu's):
//   staged_r = pre_r(input_r)          (rank r's pre-mul scalar, rounded once)
//   out      = post(((staged_0 op staged_1) op staged_2) ... op staged_N-1)
//
//   coll_device_local_test [--ranks N] [--devices D] [--mode one-thread|threads] [--quick|--thin|--tiny]
//                          [--no-grid] [--seed S] [--verbose]
//
// N ranks (default 3) on the first min(N, D, GPUs) GPUs (all of them when
// they reach each other: the reference's rank order is the device path's,
// not the host-staged path's); --mode: one of the two modes only.
// The grid, in both modes: all-reduce, reduce-scatter, reduce (every dtype x
// sum, prod, max, min, avg, pre-mul sum with a host and a device scalar, each
// rank its own), all-gather and broadcast (every dtype), in place and out of
// place, counts 0, 1, 2, 7, 1031, 65521, 1000003 and every root (--quick:
// counts 0, 1, 7, 1031, 65521, roots 0 and N-1; --thin: the same but every
// dtype with sum and every op with float32 only; --tiny: counts 1 and 1031,
// float32 and bfloat16 with sum, avg and pre-mul with a device scalar), plus
// float32 sums of 1<<20 + 3 elements (all-reduce, reduce-scatter: many
// pieces under a small COLL_DEVICE_STAGE_BYTES).
// The checks (device_local_checks.cu): every collective and a send/recv
// group as the communicators' very first device call; send/recv (a ring
// shift and a self pair in one group); asynchrony; a CUDA graph captured
// from one origin stream; mismatched counts; a rank that never calls (the
// timeout); destroy from one thread.
//
// Exit 0: all passed; 1: a failure (printed); 77: no CUDA device.
#include <cuda_runtime.h>
#include <execinfo.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "coll.h"
#include "coll/kernels/reduce.h"
#include "device_local_checks.h"
#include "device_test_common.h"
#include "device_values.h"

namespace localtest {
namespace {

namespace ck = coll::kernels;

using namespace devvalues;

constexpr Coll kColls[] = {Coll::AllReduce, Coll::ReduceScatter, Coll::Reduce, Coll::AllGather, Coll::Broadcast};
bool rooted(Coll c) { return c == Coll::Reduce || c == Coll::Broadcast; }

constexpr OpCase kOps[] = {OpCase::Sum, OpCase::Prod, OpCase::Max, OpCase::Min, OpCase::Avg, OpCase::PreMulHost,
                           OpCase::PreMulDevice};

uint64_t mixSeed(uint64_t a, uint64_t b) {
  return (a ^ (b + 0x9e3779b97f4a7c15ull + (a << 6) + (a >> 2))) * 0xff51afd7ed558ccdull;
}

// ------------------------------------------------------------ the reference

// out = post(chain over ranks in rank order of pre_r(in_r)), element by
// element, for n elements at element offset `at` of every rank's input:
// each rank's input multiplied by its scalar and rounded to the dtype
// before the sum, each step rounded, avg's division at the last.
void referenceReduce(ck::DType t, OpCase o, const std::vector<const unsigned char*>& in, size_t at, size_t n,
                     unsigned char* out) {
  const int ranks = int(in.size());
  const size_t es = ck::dtypeSize(t);
  std::vector<unsigned char> staged(n * es);
  for (int r = 0; r < ranks; ++r) {
    const ck::ReduceFn fn = fnOf(t, o, r, ranks);
    ck::ReduceFn plain = fn;
    plain.premul = false;
    const unsigned char* src = in[r] + at * es;
    if (fn.premul) {
      ck::reduce(fn, staged.data(), nullptr, src, n, true, false);
      src = staged.data();
    }
    if (r == 0) {
      if (ranks == 1) ck::reduce(plain, out, nullptr, src, n, false, true);
      else std::memcpy(out, src, n * es);
    } else {
      ck::reduce(plain, out, out, src, n, false, r == ranks - 1);
    }
  }
}

// One element as text: its value and its bits.
std::string elemText(ck::DType t, const unsigned char* p) {
  char b[96];
  uint64_t bits = 0;
  const size_t es = ck::dtypeSize(t);
  std::memcpy(&bits, p, es);
  const int hexDigits = int(2 * es);
  switch (t) {
    case ck::DType::Int8: std::snprintf(b, sizeof b, "%d", int(int8_t(bits))); break;
    case ck::DType::Uint8: std::snprintf(b, sizeof b, "%u", unsigned(bits)); break;
    case ck::DType::Int32: std::snprintf(b, sizeof b, "%d", int32_t(uint32_t(bits))); break;
    case ck::DType::Uint32: std::snprintf(b, sizeof b, "%u", uint32_t(bits)); break;
    case ck::DType::Int64: std::snprintf(b, sizeof b, "%lld", static_cast<long long>(bits)); break;
    case ck::DType::Uint64: std::snprintf(b, sizeof b, "%llu", static_cast<unsigned long long>(bits)); break;
    default: {
      double v = 0;
      if (t == ck::DType::Float16) v = ck::halfToFloat(uint16_t(bits));
      else if (t == ck::DType::Bfloat16) v = ck::bf16ToFloat(uint16_t(bits));
      else if (t == ck::DType::Fp8E4M3) v = ck::e4m3ToFloat(uint8_t(bits));
      else if (t == ck::DType::Fp8E5M2) v = ck::e5m2ToFloat(uint8_t(bits));
      else if (t == ck::DType::Float32) { float f; std::memcpy(&f, p, 4); v = f; }
      else std::memcpy(&v, p, 8);
      std::snprintf(b, sizeof b, "%.9g (0x%0*llx)", v, hexDigits, static_cast<unsigned long long>(bits));
      return b;
    }
  }
  return b;
}

// ------------------------------------------------------------ one case

// A rank's two buffers and its device scalar, on its device; they grow as
// cases need.
struct RankBuffers {
  int dev = 0;
  unsigned char* a = nullptr;
  unsigned char* b = nullptr;
  void* scalar = nullptr;
  size_t cap = 0;
  void ensure(size_t bytes) {
    LOCAL_CUDA_OK(cudaSetDevice(dev));
    if (scalar == nullptr) LOCAL_CUDA_OK(cudaMalloc(&scalar, 8));
    if (bytes <= cap) return;
    release();
    LOCAL_CUDA_OK(cudaMalloc(&a, bytes));
    LOCAL_CUDA_OK(cudaMalloc(&b, bytes));
    cap = bytes;
  }
  void release() {
    LOCAL_CUDA_OK(cudaSetDevice(dev));
    if (a) LOCAL_CUDA_OK(cudaFree(a));
    if (b) LOCAL_CUDA_OK(cudaFree(b));
    a = b = nullptr;
    cap = 0;
  }
  void releaseAll() {
    release();
    if (scalar) LOCAL_CUDA_OK(cudaFree(scalar));
    scalar = nullptr;
  }
};

// Random elements of each dtype, made once: a rank's input in a case is a
// window of them at an offset drawn from the case's seed and the rank.  (A
// fresh draw per element took a third of the time in an unoptimized
// sanitizer build.)
class InputPool {
 public:
  explicit InputPool(uint64_t seed) : seed_(seed) {}
  // Room for windows of `count` elements at kSlack offsets at least.
  void ensure(ck::DType t, size_t count) {
    std::vector<unsigned char>& p = pools_[static_cast<int>(t)];
    const size_t es = ck::dtypeSize(t), elems = count + kSlack;
    if (p.size() >= elems * es) return;
    p.resize(elems * es);
    InputRng rng{mixSeed(seed_, uint64_t(t))};
    fill(t, p.data(), elems, rng);
  }
  // `count` elements (after ensure(t, count)); `key` picks the offset.
  const unsigned char* window(ck::DType t, size_t count, uint64_t key) const {
    const std::vector<unsigned char>& p = pools_[static_cast<int>(t)];
    const size_t es = ck::dtypeSize(t);
    return p.data() + key % (p.size() / es - count + 1) * es;
  }

 private:
  static constexpr size_t kSlack = size_t(1) << 18;
  uint64_t seed_;
  std::vector<unsigned char> pools_[ck::kNumDTypes];
};

// What every case uses: each rank's device buffers, the inputs.
struct Bench {
  explicit Bench(uint64_t seed) : bufs(static_cast<size_t>(gRanks)), inputs(seed) {
    for (int r = 0; r < gRanks; ++r) bufs[r].dev = r % gDevices;
  }
  ~Bench() {
    for (RankBuffers& b : bufs) b.releaseAll();
  }
  Bench(const Bench&) = delete;
  Bench& operator=(const Bench&) = delete;
  std::vector<RankBuffers> bufs;
  InputPool inputs;
};

struct Case {
  Coll c;
  ck::DType t;
  OpCase o;
  size_t count;
  int root;
  bool inPlace;
  uint64_t seed;
};

std::string caseText(const Case& k, Mode m) {
  char b[200];
  const std::string root = rooted(k.c) ? " root " + std::to_string(k.root) : "";
  std::snprintf(b, sizeof b, "%s %s %s %s count %zu%s %s", modeName(m), collName(k.c), ck::dtypeName(k.t),
                reducing(k.c) ? opCaseName(k.o) : "-", k.count, root.c_str(), k.inPlace ? "in-place" : "out-of-place");
  return b;
}

constexpr unsigned char kJunk = 0xA5;  // what the output holds before the call, so a missing write shows

// The offset of the first byte of p[0, n) that is not kJunk, or n (memcmp
// against a block of junk: a byte loop is slow in the unoptimized builds).
size_t firstNotJunk(const unsigned char* p, size_t n) {
  static const std::vector<unsigned char> junk(4096, kJunk);
  for (size_t at = 0; at < n; at += junk.size()) {
    const size_t len = std::min(junk.size(), n - at);
    if (std::memcmp(p + at, junk.data(), len) == 0) continue;
    for (size_t i = at;; ++i)
      if (p[i] != kJunk) return i;
  }
  return n;
}

// The op rank r passes: a built-in, or a pre-mul sum made on its own
// communicator with its own scalar (host, or in its device scalar buffer).
collRedOp_t makeOp(const World& w, const Case& k, int r, const RankBuffers& buf) {
  switch (k.o) {
    case OpCase::Sum: return collSum;
    case OpCase::Prod: return collProd;
    case OpCase::Max: return collMax;
    case OpCase::Min: return collMin;
    case OpCase::Avg: return collAvg;
    default: break;
  }
  unsigned char elem[8];
  ck::Scalar unused;
  scalarOf(k.t, r, elem, &unused);
  collRedOp_t op;
  const collDataType_t dt = collDataType_t(k.t);
  if (k.o == OpCase::PreMulHost) {
    LOCAL_COLL_OK(w.comms[r], collRedOpCreatePreMulSum(&op, elem, dt, collScalarHostImmediate, w.comms[r]));
  } else {
    LOCAL_CUDA_OK(cudaSetDevice(buf.dev));
    LOCAL_CUDA_OK(cudaMemcpy(buf.scalar, elem, 8, cudaMemcpyHostToDevice));  // settled with the inputs
    LOCAL_COLL_OK(w.comms[r], collRedOpCreatePreMulSum(&op, buf.scalar, dt, collScalarDevice, w.comms[r]));
  }
  return op;
}

// Compares rank r's output with the reference; prints the first wrong
// element and how many are wrong.
void compare(const Case& k, Mode m, int r, const std::vector<unsigned char>& got, const unsigned char* want,
             size_t elems) {
  const size_t es = ck::dtypeSize(k.t);
  if (elems == 0 || std::memcmp(got.data(), want, elems * es) == 0) return;
  size_t bad = 0, first = elems;
  for (size_t i = 0; i < elems; ++i)
    if (std::memcmp(got.data() + i * es, want + i * es, es) != 0 && bad++ == 0) first = i;
  fail("%s: rank %d: %zu of %zu elements wrong, first [%zu] = %s, want %s", caseText(k, m).c_str(), r, bad, elems,
       first, elemText(k.t, got.data() + first * es).c_str(), elemText(k.t, want + first * es).c_str());
}

// One case on every rank of w, made the way m says, checked on every rank.
// False when a call failed (the communicators are then finished).
bool runCase(World& w, Mode m, const Case& k, Bench& bench) {
  const int n = w.n;
  const size_t es = ck::dtypeSize(k.t);
  const size_t inCount = k.c == Coll::ReduceScatter ? k.count * size_t(n) : k.count;
  const size_t outCount = k.c == Coll::AllGather ? k.count * size_t(n) : k.count;
  const size_t bufCount = std::max(inCount, outCount) + 1;  // +1: a write past the end shows
  const size_t nr = w.comms.size();
  // Host buffers kept from case to case (no fresh pages for every case).
  static std::vector<unsigned char> want, got;
  std::vector<const unsigned char*> in(nr);
  std::vector<void*> send(nr), recv(nr);
  bench.inputs.ensure(k.t, inCount);
  std::vector<collRedOp_t> ops(nr, collSum);
  for (int r = 0; r < n; ++r) {
    in[r] = bench.inputs.window(k.t, inCount, mixSeed(k.seed, uint64_t(r)));
    RankBuffers& buf = bench.bufs[r];
    buf.ensure(bufCount * es);
    // NCCL's in-place layouts: all-gather sendbuff = recvbuff + rank*count,
    // reduce-scatter recvbuff = sendbuff + rank*recvcount.
    send[r] = buf.a;
    recv[r] = k.inPlace ? buf.a : buf.b;
    if (k.inPlace && k.c == Coll::AllGather) send[r] = buf.a + size_t(r) * k.count * es;
    if (k.inPlace && k.c == Coll::ReduceScatter) recv[r] = buf.a + size_t(r) * k.count * es;
    // Junk where the output goes (in place: around the input too).
    LOCAL_CUDA_OK(cudaMemset(k.inPlace ? buf.a : buf.b, kJunk, bufCount * es));
    if (inCount > 0) LOCAL_CUDA_OK(cudaMemcpy(send[r], in[r], inCount * es, cudaMemcpyHostToDevice));
    if (reducing(k.c)) ops[r] = makeOp(w, k, r, buf);
  }
  settleAll();
  const collDataType_t dt = collDataType_t(k.t);
  const auto res = drive(w, m, [&](int r) -> collResult_t {
    collComm_t c = w.comms[r];
    cudaStream_t s = w.streams[r];
    switch (k.c) {
      case Coll::AllReduce: return collAllReduce(send[r], recv[r], k.count, dt, ops[r], c, s);
      case Coll::ReduceScatter: return collReduceScatter(send[r], recv[r], k.count, dt, ops[r], c, s);
      case Coll::Reduce: return collReduce(send[r], recv[r], k.count, dt, ops[r], k.root, c, s);
      case Coll::AllGather: return collAllGather(send[r], recv[r], k.count, dt, c, s);
      case Coll::Broadcast: return collBroadcast(send[r], recv[r], k.count, dt, k.root, c, s);
    }
    return collInternalError;
  });
  const std::string what = caseText(k, m);
  const bool called = allSucceeded(w, res, what);
  bool healthy = called;
  w.syncStreams();
  for (int r = 0; r < n; ++r) {
    collResult_t e = collSuccess;
    LOCAL_COLL_OK(w.comms[r], collCommGetAsyncError(w.comms[r], &e));
    if (e != collSuccess && called) {  // (after a failed call: that failure says it)
      healthy = false;
      fail("%s: rank %d: async error %s: %s", what.c_str(), r, collGetErrorString(e), collGetLastError(w.comms[r]));
    }
    if (ops[r] >= collNumOps) LOCAL_COLL_OK(w.comms[r], collRedOpDestroy(ops[r], w.comms[r]));
  }
  if (!healthy) return false;

  // The reference: one reduction serves every rank (reduce-scatter: rank r
  // gets block r of the whole buffer's).
  want.resize(std::max(inCount, outCount) * es);
  if (k.count > 0) switch (k.c) {
    case Coll::AllReduce: case Coll::Reduce: referenceReduce(k.t, k.o, in, 0, k.count, want.data()); break;
    case Coll::ReduceScatter: referenceReduce(k.t, k.o, in, 0, inCount, want.data()); break;
    case Coll::AllGather:
      for (int r = 0; r < n; ++r) std::memcpy(want.data() + size_t(r) * k.count * es, in[r], k.count * es);
      break;
    case Coll::Broadcast: std::memcpy(want.data(), in[k.root], k.count * es); break;
  }
  got.resize(bufCount * es);
  for (int r = 0; r < n; ++r) {
    LOCAL_CUDA_OK(cudaSetDevice(w.dev[r]));
    // Out of place the whole receive buffer is read: the element past the
    // output must still be junk, and a reduce's non-root receive buffer
    // ("only used on root") all junk.
    const bool wholeB = !k.inPlace;
    const size_t readCount = wholeB ? outCount + 1 : outCount;
    if (readCount > 0) LOCAL_CUDA_OK(cudaMemcpy(got.data(), recv[r], readCount * es, cudaMemcpyDeviceToHost));
    const bool nonRoot = k.c == Coll::Reduce && r != k.root;
    if (!nonRoot) {
      const unsigned char* mine = want.data() + (k.c == Coll::ReduceScatter ? size_t(r) * k.count * es : 0);
      compare(k, m, r, got, mine, outCount);
    }
    if (!wholeB) continue;
    const size_t from = (nonRoot ? 0 : outCount) * es;
    const size_t bad = from + firstNotJunk(got.data() + from, readCount * es - from);
    if (bad < readCount * es)
      fail("%s: rank %d: %s written (byte %zu = 0x%02x)", what.c_str(), r,
           nonRoot ? "a non-root's receive buffer" : "the element past the output", bad, got[bad]);
  }
  return true;
}

// ------------------------------------------------------------ the grid

struct Grid {
  bool quick = false, thin = false, tiny = false, verbose = false;
  std::vector<size_t> counts;
  uint64_t seed = 1;
};

bool inGrid(const Grid& g, Coll c, ck::DType t, OpCase o, size_t count) {
  if (!reducing(c) && o != OpCase::Sum) return false;
  if (g.tiny) {
    if (t != ck::DType::Float32 && t != ck::DType::Bfloat16) return false;
    if (reducing(c) && o != OpCase::Sum && o != OpCase::Avg && o != OpCase::PreMulDevice) return false;
  }
  if (g.thin && o != OpCase::Sum && t != ck::DType::Float32) return false;
  // The largest count only for sum/avg/pre-mul (the slow host reference).
  return !(count > 100000 && (o == OpCase::Prod || o == OpCase::Max || o == OpCase::Min));
}

// Every case of the grid on w, made the way m says; a failed call leaves the
// communicators finished, so the next case gets fresh ones.
long runGrid(std::unique_ptr<World>& w, Mode m, const Grid& g, Bench& bench) {
  long cases = 0;
  uint64_t seed = mixSeed(g.seed, uint64_t(m));
  // Cases whose calls failed: past a few the rest of this mode's grid is
  // skipped (each may wait for COLL_TIMEOUT; the failures say enough).
  constexpr int kGiveUp = 3;
  int failedCalls = 0;
  auto run = [&](const Case& k) {
    if (failedCalls >= kGiveUp) return;
    if (g.verbose) std::printf("%s\n", caseText(k, m).c_str());
    ++cases;
    if (runCase(*w, m, k, bench)) return;
    w = std::make_unique<World>();
    if (++failedCalls == kGiveUp)
      fail("%s grid: given up after %d cases whose calls failed", modeName(m), kGiveUp);
  };
  for (Coll c : kColls) {
    const long before = gFailed, casesBefore = cases;
    const auto t0 = std::chrono::steady_clock::now();
    for (int ti = 0; ti < ck::kNumDTypes; ++ti)
      for (OpCase o : kOps)
        for (size_t count : g.counts) {
          const ck::DType t = static_cast<ck::DType>(ti);
          if (!inGrid(g, c, t, o, count)) continue;
          for (bool inPlace : {false, true})
            for (int root = 0; root < (rooted(c) ? w->n : 1); ++root) {
              if (rooted(c) && (g.quick || count > 100000) && root != 0 && root != w->n - 1) continue;
              run(Case{c, t, o, count, root, inPlace, ++seed});
            }
        }
    std::printf("%-10s %-14s %5ld cases %s (%.1f s)\n", modeName(m), collName(c), cases - casesBefore,
                gFailed == before ? "ok" : "FAILED", secondsSince(t0));
  }
  // float32 sums in many pieces where COLL_DEVICE_STAGE_BYTES is small.
  if (!g.tiny) {
    const long before = gFailed;
    const size_t big = (size_t(1) << 20) + 3;
    for (bool inPlace : {false, true})
      run(Case{Coll::AllReduce, ck::DType::Float32, OpCase::Sum, big, 0, inPlace, ++seed});
    run(Case{Coll::ReduceScatter, ck::DType::Float32, OpCase::Sum, big, 0, false, ++seed});
    std::printf("%-10s float32 sum of %zu elements (all-reduce in and out of place, reduce-scatter): %s\n",
                modeName(m), big, gFailed == before ? "ok" : "FAILED");
  }
  return cases;
}

// Each collective, and a send/recv group, as the very first device call of
// fresh communicators (their device setup is collective: one thread must be
// able to run it for every rank at collGroupEnd), in both modes.
long testFirstCalls(Bench& bench, uint64_t seed) {
  const long before = gFailed;
  long cases = 0;
  for (Mode m : gModes) {
    for (Coll c : kColls) {
      World w;
      runCase(w, m, Case{c, ck::DType::Float32, OpCase::Sum, 1031, w.n - 1, false, mixSeed(seed, uint64_t(c))}, bench);
      ++cases;
    }
    World w;
    sendRecvRound(w, m, 1031, 100);
    ++cases;
  }
  std::printf("first device call of fresh communicators (every collective, send/recv; %s): %s\n",
              gModes.size() > 1 ? "both modes" : modeName(gModes[0]), gFailed == before ? "ok" : "FAILED");
  return cases;
}

// Whether every pair of the first `d` devices can reach each other.
bool peersReach(int d) {
  for (int a = 0; a < d; ++a)
    for (int b = 0; b < d; ++b) {
      int can = 1;
      if (a != b) LOCAL_CUDA_OK(cudaDeviceCanAccessPeer(&can, a, b));
      if (!can) return false;
    }
  return true;
}

// A crash prints where it happened.
void onCrash(int sig) {
  void* frames[64];
  const int n = backtrace(frames, 64);
  const char msg[] = "device_local_test: fatal signal, backtrace:\n";
  (void)!write(2, msg, sizeof msg - 1);
  backtrace_symbols_fd(frames, n, 2);
  signal(sig, SIG_DFL);
  raise(sig);
}

// --mode's value: one of the two modes only (gModes); false if unknown.
bool parseMode(const char* name) {
  for (Mode m : {Mode::OneThread, Mode::Threads})
    if (!std::strcmp(name, modeName(m))) {
      gModes = {m};
      return true;
    }
  return false;
}

int usage(const char* argv0) {
  std::fprintf(stderr,
               "usage: %s [--ranks N] [--devices D] [--mode one-thread|threads] [--quick|--thin|--tiny] [--no-grid] "
               "[--seed S] [--verbose]\n",
               argv0);
  return 2;
}

}  // namespace
}  // namespace localtest

int main(int argc, char** argv) {
  using namespace localtest;
  for (int sig : {SIGSEGV, SIGBUS, SIGABRT}) signal(sig, onCrash);
  setvbuf(stdout, nullptr, _IOLBF, 0);
  Grid g;
  bool grid = true;
  int devicesWanted = 0;  // 0: every device there is
  for (int i = 1; i < argc; ++i) {
    const bool more = i + 1 < argc;
    if (!std::strcmp(argv[i], "--quick")) g.quick = true;
    else if (!std::strcmp(argv[i], "--thin")) g.quick = g.thin = true;
    else if (!std::strcmp(argv[i], "--tiny")) g.tiny = true;
    else if (!std::strcmp(argv[i], "--verbose")) g.verbose = true;
    else if (!std::strcmp(argv[i], "--no-grid")) grid = false;  // the checks only
    else if (!std::strcmp(argv[i], "--ranks") && more) gRanks = std::atoi(argv[++i]);
    else if (!std::strcmp(argv[i], "--mode") && more && parseMode(argv[i + 1])) ++i;
    else if (!std::strcmp(argv[i], "--devices") && more) devicesWanted = std::atoi(argv[++i]);
    else if (!std::strcmp(argv[i], "--seed") && more) g.seed = std::strtoull(argv[++i], nullptr, 10);
    else return usage(argv[0]);
  }
  if (gRanks < 1 || devicesWanted < 0) return usage(argv[0]);
  int ndev = 0;
  if (cudaGetDeviceCount(&ndev) != cudaSuccess || ndev == 0) {
    std::printf("SKIP: no CUDA device (%s)\n", cudaGetErrorString(cudaGetLastError()));
    return 77;
  }
  gDevices = std::min(ndev, gRanks);
  if (devicesWanted > 0) gDevices = std::min(gDevices, devicesWanted);
  // The reference reduces in rank order, which the device path keeps; the
  // host-staged path (GPUs that cannot reach each other) does not.
  if (gDevices > 1 && !peersReach(gDevices)) {
    std::printf("devices without peer access: every rank on device 0\n");
    gDevices = 1;
  }
  std::printf("%d ranks in this process on %d device(s), rank r on device r %% %d\n", gRanks, gDevices, gDevices);

  g.counts = g.quick ? std::vector<size_t>{0, 1, 7, 1031, 65521}
                     : std::vector<size_t>{0, 1, 2, 7, 1031, 65521, 1000003};
  if (g.tiny) g.counts = {1, 1031};
  if (!grid) g.counts.clear();
  long cases = 0;
  {
    Bench bench(g.seed);
    cases += testFirstCalls(bench, g.seed);
    for (Mode m : gModes) {
      auto w = std::make_unique<World>();
      if (grid) cases += runGrid(w, m, g, bench);
      for (void (*check)(World&, Mode) : {testSendRecv, testAsync, testGraph}) {
        const long before = gFailed;
        check(*w, m);
        if (gFailed != before) w = std::make_unique<World>();  // its communicators may be finished
      }
      checkDestroy(*w, (std::string("after the ") + modeName(m) + " checks").c_str());
    }
  }
  // Not with --tiny (a short run, say under compute-sanitizer): failures on
  // purpose only cost time there.
  if (!g.tiny) {
    testMismatch();
    testTimeout();
  }
  const long failed = gFailed + devtest::gFailures;
  std::printf("coll_device_local_test: %d ranks on %d device(s), %ld collective cases and the checks: %s "
              "(%ld failures)\n", gRanks, gDevices, cases, failed == 0 ? "PASSED" : "FAILED", failed);
  return failed == 0 ? 0 : 1;
}
