#include "common/perf.h"

#include "common/args.h"

#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <set>
#include <string>
#include <vector>

namespace collperf {

namespace {

struct Ctx {
  RankInfo ri;
  PerfArgs args;
  Coll coll;
  CaseBuffers bufs;
  double bwSum = 0;
  int bwCount = 0;
  long failedRows = 0;      // nccl-tests' "Out of bounds values"
  unsigned long long wrongTotal = 0;
  size_t printedFailures = 0;
  uint64_t rep = 0;
};

void check(const Ctx& c, collResult_t res, const char* what) {
  if (res != collSuccess) dieOnCollError(c.ri, res, what);
}

void barrier(Ctx& c) {
  int32_t one = 1, sum = 0;
  check(c, collAllReduce(&one, &sum, 1, collInt32, collSum, c.ri.comm, nullptr), "barrier (collAllReduce)");
}

// The per-iteration time aggregated over ranks as -a asks.
double aggregateTime(Ctx& c, double sec) {
  double in = sec, out = 0;
  collRedOp_t op = collMax;
  switch (c.args.average) {
    case 0: in = c.ri.rank == 0 ? sec : 0.0; op = collSum; break;
    case 1: op = collSum; break;
    case 2: op = collMin; break;
    default: op = collMax; break;
  }
  check(c, collAllReduce(&in, &out, 1, collFloat64, op, c.ri.comm, nullptr), "time reduction (collAllReduce)");
  if (c.args.average == 1) out /= c.ri.nranks;
  return out;
}

unsigned long long sumOverRanks(Ctx& c, unsigned long long v) {
  uint64_t in = v, out = 0;
  check(c, collAllReduce(&in, &out, 1, collUint64, collSum, c.ri.comm, nullptr), "#wrong reduction (collAllReduce)");
  return out;
}

// --model: the plan and prediction of one row's call (collGetPlanInfo).
collCollective_t planKind(Coll coll) {
  switch (coll) {
    case Coll::AllReduce: return collCollAllReduce;
    case Coll::AllGather: return collCollAllGather;
    case Coll::Broadcast: return collCollBroadcast;
    case Coll::ReduceScatter: return collCollReduceScatter;
    case Coll::Reduce: return collCollReduce;
    case Coll::SendRecv: return collCollSend;  // the ring step's send to rank+1
  }
  return collCollAllReduce;
}

collPlanInfo_t planOf(Ctx& c, collDataType_t dtype, size_t count, int root) {
  collPlanInfo_t info;
  int peer = c.coll == Coll::SendRecv ? (c.ri.rank + 1) % c.ri.nranks : (root < 0 ? 0 : root);
  check(c, collGetPlanInfo(c.ri.comm, planKind(c.coll), count, dtype, peer, &info), "collGetPlanInfo");
  return info;
}

double modelAlpha(const Ctx& c, const collPlanInfo_t& p) { return c.args.alpha >= 0 ? c.args.alpha : p.alpha; }
double modelBeta(const Ctx& c, const collPlanInfo_t& p) { return c.args.beta >= 0 ? c.args.beta : p.beta; }

// The printed prediction: the plan's terms priced with --alpha/--beta if
// given, else exactly the tuner's own prediction.
double predicted(const Ctx& c, const collPlanInfo_t& p) {
  if (c.args.alpha < 0 && c.args.beta < 0) return p.predictedSeconds;
  return p.hops * modelAlpha(c, p) + p.handoffSeconds + p.overheadSeconds + p.byteTerm * modelBeta(c, p);
}

std::vector<int> rootsOf(const Ctx& c) {
  std::vector<int> roots;
  if (!collHasRoot(c.coll)) roots.push_back(-1);
  else if (c.args.allRoots) for (int r = 0; r < c.ri.nranks; ++r) roots.push_back(r);
  else roots.push_back(c.args.root);
  return roots;
}

// Header lines of --model: the parameters, their source, and the formula of
// every algorithm the sweep will use.
void printModelHeader(Ctx& c) {
  std::set<std::string> algos;
  std::vector<std::pair<std::string, std::string>> formulas;
  collPlanInfo_t any{};
  bool have = false;
  for (collDataType_t t : c.args.dtypes)
    for (int root : rootsOf(c))
      for (size_t bytes : sweepSizes(c.args)) {
        const PerfSizes ps = perfSizes(c.coll, bytes, dtypeBytes(t), c.ri.nranks);
        collPlanInfo_t p = planOf(c, t, ps.count, root);
        if (!have || std::strcmp(any.algorithm, "none") == 0) any = p;
        have = true;
        if (std::strcmp(p.algorithm, "none") != 0 && algos.insert(p.algorithm).second)
          formulas.emplace_back(p.algorithm, p.formula);
      }
  if (c.ri.rank != 0 || !have) return;
  std::printf("# cost model (--model): transport %s, %d ranks; alpha %.3g s, beta %.4g s/B (%.2f GB/s), "
              "overhead %.3g s per extra message, from %s\n",
              any.transport, any.nranks, any.alpha, any.beta, 1e-9 / any.beta, any.overhead, any.costSource);
  // The tuner prices shared CPUs only where the transport states a handoff
  // (tuner.cc, Tuner::price); sockets state none.
  if (any.sharedCpus > 0 && any.handoff > 0)
    std::printf("# cost model: %d ranks share %d CPUs: handoff %.3g s per hop; byte term at least all ranks' bytes / %d\n",
                any.nranks, any.sharedCpus, any.handoff, any.sharedCpus);
  else if (any.sharedCpus > 0)
    std::printf("# cost model: %d ranks share %d CPUs; the transport states no handoff, so nothing is added\n",
                any.nranks, any.sharedCpus);
  if (c.args.alpha >= 0 || c.args.beta >= 0)
    std::printf("# cost model: prediction printed with alpha %.3g s, beta %.4g s/B (%.2f GB/s) from --alpha/--beta/--bw "
                "(printed prediction only; the tuner still chose with the values above)\n",
                modelAlpha(c, any), modelBeta(c, any), 1e-9 / modelBeta(c, any));
  for (const auto& [algo, formula] : formulas)
    std::printf("# cost model: %-8s = %s\n", algo.c_str(), formula.c_str());
  std::printf("# cost model: a = alpha (+ handoff), B = 1/beta, o = overhead, S = size (B), N = ranks, "
              "P = the largest power of 2 <= N, rem = N - P, k/L = chunks per channel, D = tree depth, H = doubling or "
              "halving hops; "
              "algo = the tuner's choice, pred = predicted time, oop/pred and ip/pred = measured / predicted, "
              "lat%% = the alpha, handoff and overhead terms' share of pred\n");
}

void printHeader(Ctx& c) {
  const PerfArgs& a = c.args;
  // Every rank's line, gathered to all through the library.
  struct DevLine {
    int32_t rank, pid, localRank, pad;
    char host[48];
  } mine{}, *all = nullptr;
  static_assert(sizeof(DevLine) == 64, "fixed-size record");
  mine.rank = c.ri.rank;
  mine.pid = static_cast<int32_t>(getpid());
  const char* lr = std::getenv("COLL_LOCAL_RANK");
  mine.localRank = lr ? std::atoi(lr) : c.ri.rank;
  gethostname(mine.host, sizeof mine.host - 1);
  std::vector<DevLine> lines(static_cast<size_t>(c.ri.nranks));
  all = lines.data();
  check(c, collAllGather(&mine, all, sizeof(DevLine), collUint8, c.ri.comm, nullptr), "device lines (collAllGather)");
  if (c.ri.rank != 0) return;

  std::printf("# nThread 1 nGpus 1 minBytes %zu maxBytes %zu step: %zu(%s) warmup iters: %d iters: %d "
              "agg iters: 1 validation: %d graph: 0\n",
              a.minBytes, a.maxBytes, a.stepFactor > 1 ? a.stepFactor : a.stepBytes,
              a.stepFactor > 1 ? "factor" : "bytes", a.warmup, a.iters, a.check);
  std::printf("# Host buffers: every collective is blocking (returns with its result in place); -z %d has no effect\n",
              a.blocking);
  static const char* const kAvg[] = {"rank 0's", "the average over ranks of the", "the min over ranks of the",
                                     "the max over ranks of the"};
  std::printf("# time: %s per-iteration average of %d iterations (-a %d)\n", kAvg[a.average], a.iters, a.average);
  std::printf("#\n# Using devices\n");
  for (const DevLine& l : lines) {
    char host[49];
    std::memcpy(host, l.host, 48);
    host[48] = '\0';
    std::printf("#  Rank %2d Group  0 Pid %6d on %10s device  - [host] host memory, local rank %d\n", l.rank,
                l.pid, host, l.localRank);
  }
  std::printf("#\n");
  if (a.model) {
    printModelHeader(c);
    std::printf("#\n");
  }
  std::printf("# %10s  %12s  %8s  %6s  %6s           out-of-place                       in-place          ", "",
              "", "", "", "");
  if (a.model) std::printf("                 cost model                 ");
  std::printf("\n");
  std::printf("# %10s  %12s  %8s  %6s  %6s  %7s  %6s  %6s %6s  %7s  %6s  %6s %6s", "size", "count", "type",
              "redop", "root", "time", "algbw", "busbw", "#wrong", "time", "algbw", "busbw", "#wrong");
  if (a.model) std::printf("  %8s  %8s  %8s  %8s  %5s", "algo", "pred", "oop/pred", "ip/pred", "lat%");
  std::printf("\n");
  std::printf("# %10s  %12s  %8s  %6s  %6s  %7s  %6s  %6s  %5s  %7s  %6s  %6s  %5s", "(B)", "(elements)", "", "",
              "", "(us)", "(GB/s)", "(GB/s)", "", "(us)", "(GB/s)", "(GB/s)", "");
  if (a.model) std::printf("  %8s  %8s  %8s  %8s  %5s", "", "(us)", "", "", "");
  std::printf("\n");
  std::fflush(stdout);
}

// A time in us as the table prints it: fewer decimals as it grows.
std::string formatUs(double us, int width) {
  char t[32];
  if (us >= 10000.0) std::snprintf(t, sizeof t, "%*.0f", width, us);
  else if (us >= 100.0) std::snprintf(t, sizeof t, "%*.1f", width, us);
  else std::snprintf(t, sizeof t, "%*.2f", width, us);
  return t;
}

uint64_t caseSeed(const CaseSpec& s, size_t bytes, uint64_t rep) {
  uint64_t h = mix64(static_cast<uint64_t>(s.coll) * 131 + static_cast<uint64_t>(s.dtype));
  h = mix64(h ^ (static_cast<uint64_t>(s.op) << 8) ^ (static_cast<uint64_t>(s.root) << 16));
  h = mix64(h ^ bytes ^ (s.inplace ? 0x100000000ull : 0));
  return mix64(h ^ rep);
}

// Times one (size, in-place) cell and checks it; prints its columns.
// Returns the time (aggregated over ranks as -a asks).
double benchCell(Ctx& c, CaseSpec spec, const PerfSizes& ps) {
  const PerfArgs& a = c.args;
  spec.seed = caseSeed(spec, ps.sizeBytes, 0);
  // Initialised data also for -c 0: no garbage NaNs/denormals in the timing.
  prepareCase(c.ri, spec, c.bufs);
  if (spec.inplace && collHasOp(spec.coll) && spec.op != RedOp::Max && spec.op != RedOp::Min) {
    // In-place iterations feed each result back in: use a fixed point of
    // the op (0 for sums, 1 for products) so values never overflow (signed
    // overflow would be UB in an integer kernel) nor drift to inf/denormals.
    const Layout l = layoutOf(spec.coll, spec.count, c.ri.nranks, c.ri.rank);
    fillSmallInt(spec.dtype, spec.op == RedOp::Prod ? 1 : 0, l.inplaceCount, c.bufs.recv.data());
  }
  const void* send = nullptr;
  void* recv = nullptr;
  casePointers(c.ri, spec, c.bufs, &send, &recv);

  auto once = [&]() {
    collRedOp_t op;
    check(c, acquireOp(c.ri, spec, &op), "collRedOpCreatePreMulSum");
    check(c, issueCase(c.ri, spec, send, recv, op), collLabel(spec.coll));
    check(c, releaseOp(c.ri, spec, op), "collRedOpDestroy");
  };

  once();  // untimed: brings both sides to the same point
  barrier(c);
  auto t0 = std::chrono::steady_clock::now();
  for (int it = 0; it < a.iters; ++it) once();
  auto t1 = std::chrono::steady_clock::now();
  double sec = std::chrono::duration<double>(t1 - t0).count() / a.iters;
  sec = aggregateTime(c, sec);

  double algBw = sec > 0 ? static_cast<double>(ps.algBytes) / 1.0e9 / sec : 0.0;
  double busBw = algBw * ps.busFactor;

  unsigned long long wrong = 0;
  for (int k = 0; k < a.check; ++k) {
    spec.seed = caseSeed(spec, ps.sizeBytes, ++c.rep);
    prepareCase(c.ri, spec, c.bufs);
    check(c, runCase(c.ri, spec, c.bufs), collLabel(spec.coll));
    std::vector<Failure> fails;
    size_t local = verifyCase(c.ri, spec, c.bufs, &fails, c.printedFailures < 10 ? 10 - c.printedFailures : 0);
    for (const Failure& f : fails) std::fprintf(stderr, "%s\n", formatFailure(f).c_str());
    c.printedFailures += fails.size();
    wrong = sumOverRanks(c, local);
    if (wrong) break;
  }
  if (wrong) {
    ++c.failedRows;
    c.wrongTotal += wrong;
  }

  if (c.ri.rank == 0) {
    const std::string t = formatUs(sec * 1.0e6, 7);
    char w[32];
    if (a.check > 0) std::snprintf(w, sizeof w, "%5llu", wrong);
    else std::snprintf(w, sizeof w, "%5s", "N/A");
    std::printf("  %7s  %6.2f  %6.2f  %5s", t.c_str(), algBw, busBw, w);
  }
  c.bwSum += busBw;
  ++c.bwCount;
  return sec;
}

void warmupAt(Ctx& c, CaseSpec spec, size_t bytes) {
  const PerfSizes ps = perfSizes(c.coll, bytes, dtypeBytes(spec.dtype), c.ri.nranks);
  spec.count = ps.count;
  spec.inplace = false;
  spec.seed = caseSeed(spec, bytes, 0x77);
  prepareCase(c.ri, spec, c.bufs);
  for (int i = 0; i < c.args.warmup; ++i) check(c, runCase(c.ri, spec, c.bufs), collLabel(spec.coll));
}

void runSeries(Ctx& c, collDataType_t dtype, RedOp op, int root) {
  CaseSpec spec;
  spec.coll = c.coll;
  spec.dtype = dtype;
  spec.op = op;
  spec.root = root < 0 ? 0 : root;

  barrier(c);
  if (c.args.warmup > 0) {
    warmupAt(c, spec, c.args.maxBytes);
    warmupAt(c, spec, c.args.minBytes);
  }
  for (size_t bytes : sweepSizes(c.args)) {
    const PerfSizes ps = perfSizes(c.coll, bytes, dtypeBytes(dtype), c.ri.nranks);
    spec.count = ps.count;
    if (c.ri.rank == 0)
      std::printf("%12zu  %12zu  %8s  %6s  %6d", ps.sizeBytes, ps.count, dtypeLabel(dtype), redOpLabel(op), root);
    spec.inplace = false;
    const double oop = benchCell(c, spec, ps);
    spec.inplace = true;
    const double ip = benchCell(c, spec, ps);
    if (c.args.model) {
      const collPlanInfo_t p = planOf(c, dtype, ps.count, root);
      const double pred = predicted(c, p);
      if (c.ri.rank == 0) {
        char r1[32], r2[32];
        if (pred > 0) {
          std::snprintf(r1, sizeof r1, "%8.3f", oop / pred);
          std::snprintf(r2, sizeof r2, "%8.3f", ip / pred);
        } else {
          std::snprintf(r1, sizeof r1, "%8s", "N/A");
          std::snprintf(r2, sizeof r2, "%8s", "N/A");
        }
        // lat%: the per-message terms' share of the prediction (hops x
        // (alpha + handoff) + extra messages x overhead; >= 50:
        // latency-bound).
        const double lat =
            pred > 0 ? 100.0 * (p.hops * modelAlpha(c, p) + p.handoffSeconds + p.overheadSeconds) / pred : 0.0;
        std::printf("  %8s  %8s  %s  %s  %5.1f", p.algorithm, formatUs(pred * 1.0e6, 8).c_str(), r1, r2, lat);
      }
    }
    if (c.ri.rank == 0) {
      std::printf("\n");
      std::fflush(stdout);
    }
  }
}

}  // namespace

int perfMain(int argc, char** argv, Coll coll) {
  setvbuf(stdout, nullptr, _IOLBF, 0);
  Ctx c;
  c.coll = coll;
  int rc = parsePerfArgs(argc, argv, coll, &c.args);
  if (rc >= 0) return rc;

  collResult_t res = collCommInitFromEnv(&c.ri.comm);
  if (res != collSuccess) {
    std::fprintf(stderr, "collCommInitFromEnv failed: %s (%d): %s\n", collGetErrorString(res),
                 static_cast<int>(res), collGetLastError(c.ri.comm));
    return 1;
  }
  check(c, collCommUserRank(c.ri.comm, &c.ri.rank), "collCommUserRank");
  check(c, collCommCount(c.ri.comm, &c.ri.nranks), "collCommCount");

  if (collHasRoot(coll) && !c.args.allRoots && c.args.root >= c.ri.nranks) {
    if (c.ri.rank == 0)
      std::fprintf(stderr, "invalid value '%d' for -r root: %d ranks\n", c.args.root, c.ri.nranks);
    collCommDestroy(c.ri.comm);
    return 2;
  }

  // Every buffer holds maxBytes (+ guards), whatever the dtype or layout.
  c.bufs.send.reserve(c.args.maxBytes);
  c.bufs.recv.reserve(c.args.maxBytes);
  std::memset(c.bufs.send.data(), 0, c.args.maxBytes);
  std::memset(c.bufs.recv.data(), 0, c.args.maxBytes);

  printHeader(c);

  std::vector<RedOp> ops = collHasOp(coll) ? c.args.ops : std::vector<RedOp>{RedOp::None};
  const std::vector<int> roots = rootsOf(c);

  for (collDataType_t t : c.args.dtypes)
    for (RedOp op : ops)
      for (int root : roots) runSeries(c, t, op, root);

  if (c.ri.rank == 0) {
    std::printf("# Out of bounds values : %ld %s\n", c.failedRows, c.failedRows ? "FAILED" : "OK");
    std::printf("# Avg bus bandwidth    : %g \n", c.bwCount ? c.bwSum / c.bwCount : 0.0);
    std::printf("#\n");
    if (c.wrongTotal) std::printf("# FAILED: %llu wrong values\n", c.wrongTotal);
    std::fflush(stdout);
  }
  check(c, collCommDestroy(c.ri.comm), "collCommDestroy");
  return c.wrongTotal ? 1 : 0;
}

}  // namespace collperf
