// coll_mp_check — multi-process correctness sweep of libcoll.
//
// Run under the launcher (collrun -n N coll_mp_check [--quick]); run
// directly it is a 1-rank job.  Every rank sweeps every collective x dtype x
// op x in-place/out-of-place x count x root, computes the expected result on
// its own (perf/common/data.h: exact data, so results are bit-exact whatever
// the reduction order) and checks outputs, guard bytes around every buffer,
// untouched non-root buffers and unchanged inputs.  Then groups of different
// collectives, and argument checks that must fail with collInvalidArgument.
#include "common/colls.h"
#include "common/data.h"
#include "common/dtypes.h"

#include "bad_args.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <set>
#include <string>
#include <vector>

using namespace collperf;

namespace {

struct Options {
  bool quick = false;
  bool large = true;
  std::set<std::string> colls;  // empty: all
  std::vector<collDataType_t> dtypes;
  std::vector<RedOp> ops;
  size_t maxPrinted = 10;
  bool verbose = false;
};

const char* const kSections[] = {"badargs", "allreduce", "allgather", "broadcast", "reducescatter",
                                 "reduce", "sendrecv", "group"};

void usage(FILE* f) {
  std::fprintf(f,
      "usage: coll_mp_check [--quick] [--no-large] [--verbose] [--filter KEY=V1,V2 ...]\n"
      "  --quick         fewer counts, no 64 MiB cases (for sanitizer builds / many ranks)\n"
      "  --no-large      skip the 64 MiB cases\n"
      "  --verbose       print every argument check with the library's message\n"
      "  --filter coll=  badargs,allreduce,allgather,broadcast,reducescatter,reduce,sendrecv,group\n"
      "  --filter dtype= int8,...,f8e5m2   --filter op= sum,prod,max,min,avg,premulsum\n");
}

std::vector<std::string> splitComma(const std::string& s) {
  std::vector<std::string> out;
  size_t pos = 0;
  while (pos <= s.size()) {
    size_t e = s.find(',', pos);
    if (e == std::string::npos) e = s.size();
    if (e > pos) out.push_back(s.substr(pos, e - pos));
    pos = e + 1;
  }
  return out;
}

// Returns -1 to go on, else an exit code.
int parseOptions(int argc, char** argv, Options* o) {
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--quick") {
      o->quick = true;
      o->large = false;
    } else if (a == "-v" || a == "--verbose") {
      o->verbose = true;
    } else if (a == "--no-large") {
      o->large = false;
    } else if (a == "-h" || a == "--help") {
      usage(stdout);
      return 0;
    } else if (a == "--filter" || a.rfind("--filter=", 0) == 0) {
      std::string f;
      if (a == "--filter") {
        if (i + 1 >= argc) {
          std::fprintf(stderr, "coll_mp_check: --filter needs KEY=VALUES\n");
          return 2;
        }
        f = argv[++i];
      } else {
        f = a.substr(9);
      }
      size_t eq = f.find('=');
      if (eq == std::string::npos) {
        std::fprintf(stderr, "coll_mp_check: bad filter '%s' (KEY=V1,V2)\n", f.c_str());
        return 2;
      }
      std::string key = f.substr(0, eq);
      for (const std::string& v : splitComma(f.substr(eq + 1))) {
        if (key == "coll") {
          bool known = false;
          for (const char* s : kSections) known = known || v == s;
          if (!known) {
            std::fprintf(stderr, "coll_mp_check: unknown collective '%s'\n", v.c_str());
            return 2;
          }
          o->colls.insert(v);
        } else if (key == "dtype") {
          std::vector<collDataType_t> t;
          if (!parseDtypes(v, &t)) {
            std::fprintf(stderr, "coll_mp_check: unknown dtype '%s'\n", v.c_str());
            return 2;
          }
          o->dtypes.insert(o->dtypes.end(), t.begin(), t.end());
        } else if (key == "op") {
          std::vector<RedOp> ops;
          if (!parseRedOps(v, &ops)) {
            std::fprintf(stderr, "coll_mp_check: unknown op '%s'\n", v.c_str());
            return 2;
          }
          o->ops.insert(o->ops.end(), ops.begin(), ops.end());
        } else {
          std::fprintf(stderr, "coll_mp_check: unknown filter key '%s' (coll, dtype, op)\n", key.c_str());
          return 2;
        }
      }
    } else {
      std::fprintf(stderr, "coll_mp_check: unknown argument '%s'\n", a.c_str());
      usage(stderr);
      return 2;
    }
  }
  if (o->dtypes.empty()) o->dtypes.assign(kAllDtypes, kAllDtypes + kNumDtypes);
  if (o->ops.empty()) o->ops.assign(kAllRedOps, kAllRedOps + kNumRedOps);
  return -1;
}

struct Runner {
  RankInfo ri;
  Options opt;
  CaseBuffers bufs;
  size_t passed = 0, failed = 0;  // global cases (agreed over ranks)
  size_t printed = 0;             // failure lines this rank printed

  bool wants(const char* section) const { return opt.colls.empty() || opt.colls.count(section) != 0; }

  void printFailures(const std::vector<Failure>& fails) {
    for (const Failure& f : fails) {
      if (printed >= opt.maxPrinted) return;
      std::fprintf(stderr, "%s\n", formatFailure(f).c_str());
      ++printed;
    }
  }
  void printFailure(const std::string& line) {
    if (printed >= opt.maxPrinted) return;
    std::fprintf(stderr, "FAIL rank %d %s\n", ri.rank, line.c_str());
    ++printed;
  }

  // Agrees on per-case verdicts (a case fails if it failed on any rank) and
  // prints the section's progress line.
  void finishSection(const char* name, std::vector<uint8_t>& localFail, double seconds) {
    std::vector<uint8_t> global(localFail.size(), 0);
    if (!localFail.empty()) {
      collResult_t res = collAllReduce(localFail.data(), global.data(), localFail.size(), collUint8, collMax,
                                       ri.comm, nullptr);
      if (res != collSuccess) dieOnCollError(ri, res, "verdict reduction (collAllReduce)");
    }
    size_t bad = static_cast<size_t>(std::count(global.begin(), global.end(), uint8_t(1)));
    passed += global.size() - bad;
    failed += bad;
    if (ri.rank == 0) {
      std::printf("[mp_check] %-13s %6zu cases, %6zu passed, %4zu failed (%.1f s)\n", name, global.size(),
                  global.size() - bad, bad, seconds);
      std::fflush(stdout);
    }
  }

  std::vector<size_t> counts() const {
    const size_t n = static_cast<size_t>(ri.nranks);
    std::vector<size_t> c;
    if (opt.quick) c = {0, 1, 2, 7, n + 1, 1009};
    else c = {0, 1, 2, 7, 31, n - 1, n, n + 1, 1009, 65537};
    std::sort(c.begin(), c.end());
    c.erase(std::unique(c.begin(), c.end()), c.end());
    return c;
  }

  static uint64_t seedOf(const CaseSpec& s, uint64_t salt) {
    uint64_t h = mix64(0xc011c0ull + static_cast<uint64_t>(s.coll));
    h = mix64(h ^ (static_cast<uint64_t>(s.dtype) << 8) ^ (static_cast<uint64_t>(s.op) << 16));
    h = mix64(h ^ (static_cast<uint64_t>(s.root) << 24) ^ (s.inplace ? 1ull << 40 : 0));
    return mix64(h ^ s.count ^ (salt << 48));
  }

  // Runs one case; true if this rank saw it pass.
  bool runOne(CaseSpec spec) {
    spec.seed = seedOf(spec, 0);
    prepareCase(ri, spec, bufs);
    collResult_t res = runCase(ri, spec, bufs);
    if (res != collSuccess) {
      std::fprintf(stderr, "FAIL rank %d %s: returned %s (%d): %s\n", ri.rank, describe(spec).c_str(),
                   collGetErrorString(res), static_cast<int>(res), collGetLastError(ri.comm));
      // The ranks may now disagree on what runs next: stop here.
      dieOnCollError(ri, res, describe(spec).c_str());
    }
    std::vector<Failure> fails;
    size_t wrong = verifyCase(ri, spec, bufs, &fails, opt.maxPrinted);
    printFailures(fails);
    return wrong == 0;
  }

  void sweep(Coll coll) {
    const char* name = collLabel(coll);
    if (!wants(name)) return;
    auto t0 = std::chrono::steady_clock::now();
    std::vector<uint8_t> fails;
    std::vector<RedOp> ops = collHasOp(coll) ? opt.ops : std::vector<RedOp>{RedOp::None};
    std::vector<int> roots{0};
    if (collHasRoot(coll) && ri.nranks > 1) roots.push_back(ri.nranks - 1);
    for (collDataType_t t : opt.dtypes)
      for (RedOp op : ops)
        for (int root : roots)
          for (int inplace = 0; inplace < (coll == Coll::SendRecv ? 1 : 2); ++inplace)
            for (size_t count : counts()) {
              CaseSpec s;
              s.coll = coll;
              s.dtype = t;
              s.op = op;
              s.root = root;
              s.inplace = inplace != 0;
              s.count = count;
              fails.push_back(runOne(s) ? 0 : 1);
            }
    // One large case per layout: 64 MiB worth of float32 (16 Mi elements)
    // for all-reduce; all-gather / reduce-scatter move 64 MiB in total.
    if (opt.large && (coll == Coll::AllReduce || coll == Coll::AllGather || coll == Coll::ReduceScatter)) {
      const size_t big = size_t(16) << 20;
      const struct { collDataType_t t; RedOp op; } combos[] = {{collFloat32, RedOp::Sum}, {collInt8, RedOp::Max}};
      for (const auto& cb : combos) {
        RedOp op = collHasOp(coll) ? cb.op : RedOp::None;
        if (std::find(opt.dtypes.begin(), opt.dtypes.end(), cb.t) == opt.dtypes.end()) continue;
        if (collHasOp(coll) && std::find(opt.ops.begin(), opt.ops.end(), op) == opt.ops.end()) continue;
        for (int inplace = 0; inplace < 2; ++inplace) {
          CaseSpec s;
          s.coll = coll;
          s.dtype = cb.t;
          s.op = op;
          s.inplace = inplace != 0;
          s.count = coll == Coll::AllReduce ? big : big / static_cast<size_t>(ri.nranks);
          fails.push_back(runOne(s) ? 0 : 1);
        }
      }
    }
    finishSection(name, fails, std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }

  // Several different collectives (and a send/recv ring) in one group.
  void groups() {
    if (!wants("group")) return;
    auto t0 = std::chrono::steady_clock::now();
    std::vector<uint8_t> fails;
    const int n = ri.nranks;
    std::vector<size_t> cs;
    if (opt.quick) cs = {1, static_cast<size_t>(n) + 1};
    else cs = {0, 1, 7, static_cast<size_t>(n) + 1, 1009};
    const Coll members[] = {Coll::AllReduce, Coll::AllGather, Coll::Broadcast,
                            Coll::ReduceScatter, Coll::Reduce, Coll::SendRecv};
    CaseBuffers memberBufs[6];
    for (collDataType_t t : opt.dtypes)
      for (RedOp op : opt.ops)
        for (int inplace = 0; inplace < 2; ++inplace)
          for (size_t count : cs) {
            CaseSpec specs[6];
            collRedOp_t rops[6];
            for (int m = 0; m < 6; ++m) {
              CaseSpec& s = specs[m];
              s.coll = members[m];
              s.dtype = t;
              s.op = collHasOp(s.coll) ? op : RedOp::None;
              s.root = s.coll == Coll::Reduce ? n - 1 : 0;
              // Send/recv on one buffer is a race, not an in-place layout.
              s.inplace = inplace != 0 && s.coll != Coll::SendRecv;
              // Different counts per member, so a mixed-up pairing shows.
              s.count = count + static_cast<size_t>(m % 3);
              s.seed = seedOf(s, 7 + static_cast<uint64_t>(m));
              prepareCase(ri, s, memberBufs[m]);
              collResult_t r = acquireOp(ri, s, &rops[m]);
              if (r != collSuccess) dieOnCollError(ri, r, "collRedOpCreatePreMulSum");
            }
            collResult_t res = collGroupStart();
            collResult_t first = res;
            for (int m = 0; m < 6 && res == collSuccess; ++m) {
              const void* sp = nullptr;
              void* rp = nullptr;
              casePointers(ri, specs[m], memberBufs[m], &sp, &rp);
              collResult_t r = issueCase(ri, specs[m], sp, rp, rops[m]);
              if (r != collSuccess && first == collSuccess) first = r;
            }
            collResult_t end = collGroupEnd();
            if (first == collSuccess) first = end;
            if (first != collSuccess) {
              std::fprintf(stderr, "FAIL rank %d group of 6 (%s %s count %zu %s): %s (%d): %s\n", ri.rank,
                           dtypeLabel(t), redOpLabel(op), count, inplace ? "in-place" : "out-of-place",
                           collGetErrorString(first), static_cast<int>(first), collGetLastError(ri.comm));
              dieOnCollError(ri, first, "group");
            }
            bool ok = true;
            for (int m = 0; m < 6; ++m) {
              std::vector<Failure> fl;
              size_t wrong = verifyCase(ri, specs[m], memberBufs[m], &fl, opt.maxPrinted);
              for (Failure& f : fl) f.what = "in group: " + f.what;
              printFailures(fl);
              ok = ok && wrong == 0;
              collResult_t r = releaseOp(ri, specs[m], rops[m]);
              if (r != collSuccess) dieOnCollError(ri, r, "collRedOpDestroy");
            }
            fails.push_back(ok ? 0 : 1);
          }
    finishSection("group", fails, std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }

  void badArgs() {
    if (!wants("badargs")) return;
    auto t0 = std::chrono::steady_clock::now();
    std::vector<uint8_t> fails;
    std::vector<std::string> msgs;
    runBadArgChecks(ri, &fails, &msgs, opt.verbose);
    for (const std::string& m : msgs) printFailure(m);
    finishSection("badargs", fails, std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }
};

}  // namespace

int main(int argc, char** argv) {
  setvbuf(stdout, nullptr, _IOLBF, 0);
  Runner run;
  int rc = parseOptions(argc, argv, &run.opt);
  if (rc >= 0) return rc;

  collResult_t res = collCommInitFromEnv(&run.ri.comm);
  if (res != collSuccess) {
    std::fprintf(stderr, "coll_mp_check: collCommInitFromEnv failed: %s (%d): %s\n", collGetErrorString(res),
                 static_cast<int>(res), collGetLastError(nullptr));
    return 1;
  }
  if ((res = collCommUserRank(run.ri.comm, &run.ri.rank)) != collSuccess) dieOnCollError(run.ri, res, "collCommUserRank");
  if ((res = collCommCount(run.ri.comm, &run.ri.nranks)) != collSuccess) dieOnCollError(run.ri, res, "collCommCount");
  if (run.ri.rank == 0)
    std::printf("[mp_check] %d ranks, %zu dtypes, %zu ops%s\n", run.ri.nranks, run.opt.dtypes.size(),
                run.opt.ops.size(), run.opt.quick ? ", quick" : "");

  auto t0 = std::chrono::steady_clock::now();
  run.badArgs();
  for (Coll c : {Coll::AllReduce, Coll::AllGather, Coll::Broadcast, Coll::ReduceScatter, Coll::Reduce,
                 Coll::SendRecv})
    run.sweep(c);
  run.groups();
  double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();

  if (run.ri.rank == 0) {
    std::printf("mp_check: %zu passed, %zu failed (%d ranks, %.1f s)\n", run.passed, run.failed, run.ri.nranks,
                secs);
    std::fflush(stdout);
  }
  res = collCommDestroy(run.ri.comm);
  if (res != collSuccess) {
    std::fprintf(stderr, "rank %d: collCommDestroy failed: %s\n", run.ri.rank, collGetErrorString(res));
    return 1;
  }
  return run.failed ? 1 : 0;
}
