// device_coll_test — libcoll's collectives on CUDA device buffers, run by N
// ranks (processes under collrun, all on one GPU or spread over several),
// checked bit for bit against a host reference computed with
// coll::kernels::reduce() in the same order the device path reduces:
//   staged_r = pre_r(input_r)          (rank r's pre-mul scalar, rounded once)
//   out      = post(((staged_0 op staged_1) op staged_2) ... op staged_N-1)
//
//   collrun -n N -- coll_device_coll_test [--quick|--thin|--tiny] [--big] [--seed S]
//
// Checks: all-reduce, reduce-scatter, reduce (every dtype x sum, prod, max,
// min, avg, pre-mul sum with a host and a device scalar), all-gather and
// broadcast (several dtypes), counts 0, 1, 2, 7, 1031, 65521, 1000003 (--big
// adds 256 MiB of float32), in place and out of place, with every root;
// --quick: counts 0, 1, 7, 1031, 65521, roots 0 and N-1; --thin: the same
// but every dtype with sum and every op with float32 only (for entries
// whose path's element handling a fuller entry already checks: ranks on
// other hosts, the thread sanitizer);
// asynchrony (the call returns while a blocker kernel holds the stream, the output is untouched until
// it is released, an event after the call then completes with the result written); capture into a CUDA graph and three
// replays with new inputs; a host/device mix refused with collInvalidArgument; send/recv: a ring shift
// and an all-to-all (self included) in one group, and an ungrouped pair, sizes 1 B to 3 MB, aligned and not.
//
// This file: the collective cases and main; device_coll_checks.cu: asynchrony, crossed streams, graph,
// send/recv, mix; device_group_checks.cu: groups; device_graph_checks.cu: graphs ordered across streams
// and with live calls; device_failure_checks.cu: mismatched arguments and timeouts.
//
// Exit 0: all passed; 1: a failure (printed); 77: no CUDA device.
#include <cuda_runtime.h>
#include <execinfo.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "coll.h"
#include "coll/kernels/reduce.h"
#include "device_test_common.h"
#include "device_values.h"
#include "schedule/staged_pieces.h"
#include "staged_piece_bytes.h"

namespace ck = coll::kernels;
using namespace devtest;

namespace {

using namespace devvalues;


// The same call on host buffers, piece by piece as the staged path cuts it
// (pieces of at most COLL_STAGED_PIECE_BYTES a side, schedule/staged_pieces.h,
// each a host call of its own; a collective: every rank makes it).
void stagedReference(Coll c, collDataType_t dt, collRedOp_t op, size_t count, int root, size_t es,
                     const std::vector<unsigned char>& in, unsigned char* want) {
  using coll::sched::CollKind;
  const CollKind kind = c == Coll::AllReduce ? CollKind::AllReduce
                        : c == Coll::ReduceScatter ? CollKind::ReduceScatter : CollKind::Reduce;
  const size_t pe = coll::sched::stagedPieceElems(kind, es, gN, stagedPieceBytes());
  std::vector<unsigned char> pieceIn;
  for (size_t k = 0; k < coll::sched::stagedPieceCount(count, pe); ++k) {
    const coll::sched::StagedPiece p = coll::sched::stagedPiece(count, pe, k);
    const unsigned char* x = in.data() + p.offset * es;
    unsigned char* w = want + p.offset * es;
    switch (c) {
      case Coll::AllReduce: COLL_OK(collAllReduce(x, w, p.count, dt, op, gComm, nullptr)); break;
      case Coll::ReduceScatter:  // the piece of each rank's block, packed
        pieceIn.resize(size_t(gN) * p.count * es);
        for (int b = 0; b < gN; ++b)
          std::memcpy(pieceIn.data() + size_t(b) * p.count * es, in.data() + (size_t(b) * count + p.offset) * es,
                      p.count * es);
        COLL_OK(collReduceScatter(pieceIn.data(), w, p.count, dt, op, gComm, nullptr));
        break;
      default: COLL_OK(collReduce(x, w, p.count, dt, op, root, gComm, nullptr)); break;
    }
  }
}

// The ops under test: the built-ins, then pre-mul sum with each residence.
ck::ReduceFn fnOf(ck::DType t, OpCase o, int rank) { return devvalues::fnOf(t, o, rank, gN); }

// out = post(chain over ranks of pre_r(in_r)) for n elements at element
// offset `at` of each rank's input.
void referenceReduce(ck::DType t, OpCase o, const std::vector<std::vector<unsigned char>>& in, size_t at, size_t n,
                     unsigned char* out) {
  const size_t es = ck::dtypeSize(t);
  std::vector<unsigned char> staged(n * es);
  for (int r = 0; r < gN; ++r) {
    const ck::ReduceFn fn = fnOf(t, o, r);
    ck::ReduceFn plain = fn;
    plain.premul = false;
    const unsigned char* src = in[r].data() + at * es;
    if (fn.premul) {
      ck::reduce(fn, staged.data(), nullptr, src, n, true, false);
      src = staged.data();
    }
    const bool last = r == gN - 1;
    if (r == 0) {
      if (gN == 1) ck::reduce(plain, out, nullptr, src, n, false, true);
      else if (n > 0) std::memcpy(out, src, n * es);  // (out may be null when n == 0)
    } else {
      ck::reduce(plain, out, out, src, n, false, last);
    }
  }
}

struct DeviceBuffers {
  void* a = nullptr;
  void* b = nullptr;
  size_t cap = 0;
  void ensure(size_t bytes) {
    if (bytes <= cap) return;
    if (a) CUDA_OK(cudaFree(a));
    if (b) CUDA_OK(cudaFree(b));
    CUDA_OK(cudaMalloc(&a, bytes));
    CUDA_OK(cudaMalloc(&b, bytes));
    cap = bytes;
  }
};

uint64_t mix(uint64_t a, uint64_t b) { return (a ^ (b + 0x9e3779b97f4a7c15ull + (a << 6) + (a >> 2))) * 0xff51afd7ed558ccdull; }

// One case: every rank makes every rank's input (same seed), runs the call,
// and compares its own output with the reference.
void runCase(Coll c, ck::DType t, OpCase o, size_t count, int root, bool inPlace, uint64_t seed, DeviceBuffers& B,
             cudaStream_t s) {
  const size_t es = ck::dtypeSize(t);
  const size_t n = size_t(gN);
  size_t inCount = count, outCount = count;
  if (c == Coll::ReduceScatter) inCount = count * n;
  if (c == Coll::AllGather) outCount = count * n;
  const size_t bufCount = std::max(inCount, outCount) + 1;
  B.ensure(bufCount * es);

  std::vector<std::vector<unsigned char>> in(gN, std::vector<unsigned char>(inCount * es));
  for (int r = 0; r < gN; ++r) {
    InputRng rng{mix(seed, uint64_t(r))};
    fill(t, in[r].data(), inCount, rng);
  }
  // Layout: in place uses one buffer (B.a) with the input where the API wants it.
  char* dA = static_cast<char*>(B.a);
  char* dB = static_cast<char*>(B.b);
  void* sendbuf = dA;
  void* recvbuf = inPlace ? dA : dB;
  if (inPlace && c == Coll::AllGather) sendbuf = dA + size_t(gRank) * count * es;
  if (inPlace && c == Coll::ReduceScatter) recvbuf = dA + size_t(gRank) * count * es;
  // Known junk in the output, so a missing write shows.
  CUDA_OK(cudaMemsetAsync(recvbuf == sendbuf ? dB : recvbuf, 0xA5, outCount * es, s));
  if (inPlace) CUDA_OK(cudaMemsetAsync(dA, 0xA5, bufCount * es, s));
  CUDA_OK(cudaMemcpyAsync(sendbuf, in[gRank].data(), inCount * es, cudaMemcpyHostToDevice, s));

  collRedOp_t op = collSum;
  collRedOp_t hostOp = collSum;  // the op of the host reference call (a device scalar's value, as a host one)
  void* devScalar = nullptr;
  if (reducing(c)) {
    switch (o) {
      case OpCase::Sum: op = collSum; break;
      case OpCase::Prod: op = collProd; break;
      case OpCase::Max: op = collMax; break;
      case OpCase::Min: op = collMin; break;
      case OpCase::Avg: op = collAvg; break;
      case OpCase::PreMulHost: case OpCase::PreMulDevice: {
        unsigned char elem[8];
        ck::Scalar unused;
        scalarOf(t, gRank, elem, &unused);
        if (o == OpCase::PreMulHost) {
          COLL_OK(collRedOpCreatePreMulSum(&op, elem, collDataType_t(t), collScalarHostImmediate, gComm));
        } else {
          CUDA_OK(cudaMalloc(&devScalar, 8));
          CUDA_OK(cudaMemcpy(devScalar, elem, 8, cudaMemcpyHostToDevice));
          settleSetup();
          COLL_OK(collRedOpCreatePreMulSum(&op, devScalar, collDataType_t(t), collScalarDevice, gComm));
        }
        if (gStaged) COLL_OK(collRedOpCreatePreMulSum(&hostOp, elem, collDataType_t(t), collScalarHostImmediate, gComm));
        break;
      }
    }
    if (op < collNumOps) hostOp = op;
  }
  const collDataType_t dt = collDataType_t(t);
  const uint64_t opsBefore = streamOpsQueued(s);
  switch (c) {
    case Coll::AllReduce: COLL_OK(collAllReduce(sendbuf, recvbuf, count, dt, op, gComm, s)); break;
    case Coll::ReduceScatter: COLL_OK(collReduceScatter(sendbuf, recvbuf, count, dt, op, gComm, s)); break;
    case Coll::Reduce: COLL_OK(collReduce(sendbuf, recvbuf, count, dt, op, root, gComm, s)); break;
    case Coll::AllGather: COLL_OK(collAllGather(sendbuf, recvbuf, count, dt, gComm, s)); break;
    case Coll::Broadcast: COLL_OK(collBroadcast(sendbuf, recvbuf, count, dt, root, gComm, s)); break;
  }
  checkStreamOps(collName(c), opsBefore, s);
  std::vector<unsigned char> got(outCount * es);
  CUDA_OK(cudaMemcpyAsync(got.data(), recvbuf, outCount * es, cudaMemcpyDeviceToHost, s));
  CUDA_OK(cudaStreamSynchronize(s));

  std::vector<unsigned char> want(outCount * es);
  bool checked = true;
  const bool hostReference = gStaged && reducing(c) && count > 0;
  if (hostReference) {
    stagedReference(c, dt, hostOp, count, root, es, in[gRank], want.data());
    checked = c != Coll::Reduce || gRank == root;
  }
  if (hostOp >= collNumOps && hostOp != op) COLL_OK(collRedOpDestroy(hostOp, gComm));
  if (op >= collNumOps) COLL_OK(collRedOpDestroy(op, gComm));
  if (devScalar) CUDA_OK(cudaFree(devScalar));

  if (!hostReference && count > 0) switch (c) {  // (count 0: nothing to compare, and empty buffers may be null)
    case Coll::AllReduce: referenceReduce(t, o, in, 0, count, want.data()); break;
    case Coll::ReduceScatter: referenceReduce(t, o, in, size_t(gRank) * count, count, want.data()); break;
    case Coll::Reduce:
      checked = gRank == root;
      if (checked) referenceReduce(t, o, in, 0, count, want.data());
      break;
    case Coll::AllGather:
      for (int r = 0; r < gN; ++r) std::memcpy(want.data() + size_t(r) * count * es, in[r].data(), count * es);
      break;
    case Coll::Broadcast: std::memcpy(want.data(), in[root].data(), count * es); break;
  }
  if (!checked || want == got) return;
  size_t bad = 0;
  while (bad < want.size() && want[bad] == got[bad]) ++bad;
  ++gFailures;
  if (gFailures <= 10) {
    std::fprintf(stderr, "rank %d: FAIL %s %s %s count %zu root %d %s: first bad byte %zu (element %zu): want %02x got %02x\n",
                 gRank, collName(c), ck::dtypeName(t), reducing(c) ? opCaseName(o) : "-", count, root,
                 inPlace ? "in-place" : "out-of-place", bad, bad / es, want[bad], got[bad]);
  }
}

}  // namespace

// Whether some rank runs on another host than this one, by the library's own
// rule (core/comm.cc: COLL_HOSTID, else hostname and boot id): then every
// device call takes the host-staged path unless COLL_DEVICE_PATH=ipc.
bool ranksOnOtherHosts() {
  std::string id;
  if (const char* forced = std::getenv("COLL_HOSTID")) {
    id = forced;
  } else {
    char host[256] = {0};
    gethostname(host, sizeof host - 1);
    id = std::string(host) + "/";
    if (FILE* f = std::fopen("/proc/sys/kernel/random/boot_id", "r")) {
      char boot[64] = {0};
      if (std::fgets(boot, sizeof boot, f) != nullptr) id += std::string(boot, std::strcspn(boot, "\n"));
      std::fclose(f);
    }
  }
  const unsigned long long mine = std::hash<std::string>{}(id);
  std::vector<unsigned long long> all(size_t(gN), 0);
  COLL_OK(collAllGather(&mine, all.data(), 1, collUint64, gComm, nullptr));
  return std::any_of(all.begin(), all.end(), [&](unsigned long long h) { return h != mine; });
}

// A crash prints where it happened (the ranks' output goes through pipes).
void onCrash(int sig) {
  void* frames[64];
  const int n = backtrace(frames, 64);
  const char msg[] = "device_coll_test: fatal signal, backtrace:\n";
  (void)!write(2, msg, sizeof msg - 1);
  backtrace_symbols_fd(frames, n, 2);
  signal(sig, SIG_DFL);
  raise(sig);
}

int main(int argc, char** argv) {
  for (int sig : {SIGSEGV, SIGBUS, SIGABRT}) signal(sig, onCrash);
  setvbuf(stdout, nullptr, _IOLBF, 0);
  bool quick = false, thin = false, big = false, verbose = false, tiny = false, grid = true;
  uint64_t seed = 1;
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--quick")) quick = true;
    else if (!std::strcmp(argv[i], "--thin")) quick = thin = true;
    else if (!std::strcmp(argv[i], "--big")) big = true;
    else if (!std::strcmp(argv[i], "--verbose")) verbose = true;
    else if (!std::strcmp(argv[i], "--tiny")) tiny = true;
    else if (!std::strcmp(argv[i], "--no-grid")) grid = false;  // the checks only, no collective cases
    else if (!std::strcmp(argv[i], "--seed") && i + 1 < argc) seed = std::strtoull(argv[++i], nullptr, 10);
    else {
      std::fprintf(stderr, "usage: %s [--quick|--thin|--tiny] [--no-grid] [--big] [--verbose] [--seed S]\n", argv[0]);
      return 2;
    }
  }
  int ndev = 0;
  if (cudaGetDeviceCount(&ndev) != cudaSuccess || ndev == 0) {
    std::printf("SKIP: no CUDA device (%s)\n", cudaGetErrorString(cudaGetLastError()));
    return 77;
  }
  COLL_OK(collCommInitFromEnv(&gComm));
  COLL_OK(collCommUserRank(gComm, &gRank));
  COLL_OK(collCommCount(gComm, &gN));
  CUDA_OK(cudaSetDevice(gRank % ndev));
  // The host-staged path: forced, taken because some rank is on another
  // host, or because two ranks' GPUs cannot reach each other (its
  // reductions run in the host executor's order).
  const char* path = std::getenv("COLL_DEVICE_PATH");
  gStaged = path != nullptr && std::strcmp(path, "staged") == 0;
  if (ranksOnOtherHosts() && (path == nullptr || std::strcmp(path, "ipc") != 0)) gStaged = true;
  for (int a = 0; a < std::min(gN, ndev); ++a)
    for (int b = 0; b < std::min(gN, ndev); ++b) {
      int can = 1;
      if (a != b) CUDA_OK(cudaDeviceCanAccessPeer(&can, a, b));
      if (!can) gStaged = true;
    }
  if (gRank == 0 && gStaged) std::printf("device calls take the host-staged path\n");
  cudaStream_t s;
  CUDA_OK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  DeviceBuffers B;

  // --tiny (for compute-sanitizer): float32 and bfloat16, sum/avg/pre-mul
  // with a device scalar, one count per all-reduce path (one launch,
  // one-shot, reduce-scatter + all-gather).
  std::vector<size_t> counts = quick ? std::vector<size_t>{0, 1, 7, 1031, 65521}
                                     : std::vector<size_t>{0, 1, 2, 7, 1031, 65521, 1000003};
  if (tiny) counts = {1, 1031, 40000, 70001};
  if (!grid) counts.clear();
  const OpCase allOps[] = {OpCase::Sum, OpCase::Prod, OpCase::Max, OpCase::Min, OpCase::Avg, OpCase::PreMulHost,
                           OpCase::PreMulDevice};
  const ck::DType copyTypes[] = {ck::DType::Int8, ck::DType::Float16, ck::DType::Float32, ck::DType::Float64};
  long cases = 0;
  uint64_t caseSeed = seed;
  for (Coll c : {Coll::AllReduce, Coll::ReduceScatter, Coll::Reduce, Coll::AllGather, Coll::Broadcast}) {
    const long before = gFailures;
    long n = 0;
    const auto t0 = std::chrono::steady_clock::now();
    for (int ti = 0; ti < ck::kNumDTypes; ++ti) {
      const ck::DType t = static_cast<ck::DType>(ti);
      if (!reducing(c) && std::find(std::begin(copyTypes), std::end(copyTypes), t) == std::end(copyTypes)) continue;
      if (tiny && t != ck::DType::Float32 && t != ck::DType::Bfloat16) continue;
      for (OpCase o : allOps) {
        if (!reducing(c) && o != OpCase::Sum) continue;
        if (tiny && reducing(c) && o != OpCase::Sum && o != OpCase::Avg && o != OpCase::PreMulDevice) continue;
        if (thin && o != OpCase::Sum && t != ck::DType::Float32) continue;
        for (size_t count : counts) {
          // The largest count only for sum/avg/pre-mul (the slow host reference).
          if (count > 100000 && (o == OpCase::Prod || o == OpCase::Max || o == OpCase::Min)) continue;
          for (bool inPlace : {false, true}) {
            const bool rooted = c == Coll::Reduce || c == Coll::Broadcast;
            for (int root = 0; root < (rooted ? gN : 1); ++root) {
              if (rooted && count > 100000 && root != gN - 1) continue;
              if (rooted && quick && root != 0 && root != gN - 1) continue;
              if (verbose)
                std::printf("rank %d: %s %s %s count %zu root %d%s\n", gRank, collName(c), ck::dtypeName(t),
                            opCaseName(o), count, root, inPlace ? " in-place" : "");
              runCase(c, t, o, count, root, inPlace, ++caseSeed, B, s);
              ++n;
            }
          }
        }
      }
    }
    cases += n;
    const double sec = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (gRank == 0)
      std::printf("%-14s %5ld cases %s (%.1f s)\n", collName(c), n, gFailures == before ? "ok" : "FAILED", sec);
  }
  if (big) {
    const size_t count = (256u << 20) / 4;
    for (bool inPlace : {false, true}) runCase(Coll::AllReduce, ck::DType::Float32, OpCase::Sum, count, 0, inPlace, ++caseSeed, B, s);
    cases += 2;
    if (gRank == 0) std::printf("allreduce float32 sum 256 MiB in and out of place: %s\n", gFailures ? "FAILED" : "ok");
  }
  testSendRecv(s);
  testAsync(s);
  testPreMulLifetime(s);
  testCrossedStreams();
  testOneCommTwoStreams();
  testStagedPoolBound();
  testGraph(s);
  testGraphOrderedWithLive();
  testCapturesInterleaved();
  testMix();
  testReduceNullRecv(s);
  testGroup(s);
  testGroupDependent(s);
  testGroupJoinsStreams();
  testGroupTwoStreamsInGraph();
  testGroupBudget(s);
  if (!gStaged) testGroupOneKernel(s);
  // Not under the sanitizers (--tiny): more communicators, and timeouts on purpose, would only slow them.
  if (!tiny) testMismatch(s);
  if (!tiny) testTimeout(s);
  // Nobody tears down its regions while a peer may still use them.
  CUDA_OK(cudaStreamSynchronize(s));
  COLL_OK(collCommDestroy(gComm));
  if (gRank == 0 || gFailures)
    std::printf("rank %d: %ld cases, %ld failures on %d ranks\n", gRank, cases, gFailures, gN);
  return gFailures ? 1 : 0;
}
