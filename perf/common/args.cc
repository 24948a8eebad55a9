#include "common/args.h"

#include <getopt.h>

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>

namespace collperf {

bool parseSize(const char* s, size_t* out) {
  if (!s || !*s) return false;
  // Digits and at most one '.', then an optional single unit letter.
  const char* p = s;
  bool digits = false, dot = false;
  while (*p) {
    if (*p >= '0' && *p <= '9') digits = true;
    else if (*p == '.' && !dot) dot = true;
    else break;
    ++p;
  }
  if (!digits) return false;
  double mult = 1;
  if (*p) {
    switch (*p) {
      case 'k': case 'K': mult = 1024.0; break;
      case 'm': case 'M': mult = 1024.0 * 1024; break;
      case 'g': case 'G': mult = 1024.0 * 1024 * 1024; break;
      default: return false;
    }
    ++p;
    if (*p == 'B' || *p == 'b') ++p;  // "1MB" is fine too
    if (*p) return false;
  }
  errno = 0;
  double v = std::strtod(s, nullptr) * mult;
  if (errno != 0 || !std::isfinite(v) || v < 0 || v > 1.0e18) return false;
  *out = static_cast<size_t>(v);
  return true;
}

namespace {

bool parseInt(const char* s, long lo, long hi, long* out) {
  if (!s || !*s) return false;
  char* end = nullptr;
  errno = 0;
  long v = std::strtol(s, &end, 0);
  if (errno != 0 || !end || *end != '\0' || v < lo || v > hi) return false;
  *out = v;
  return true;
}

// Long-only options.
constexpr int kOptModel = 1000, kOptAlpha = 1001, kOptBeta = 1002, kOptBw = 1003;

// A finite double in [lo, hi]; the whole string.
bool parseDouble(const char* s, double lo, double hi, double* out) {
  if (!s || !*s) return false;
  char* end = nullptr;
  errno = 0;
  double v = std::strtod(s, &end);
  if (errno != 0 || !end || *end != '\0' || !std::isfinite(v) || v < lo || v > hi) return false;
  *out = v;
  return true;
}

void usage(const char* prog, Coll coll, FILE* f) {
  std::fprintf(f,
      "USAGE: %s [options]   (run under collrun: collrun -n N %s ...)\n"
      "  -b,--minbytes <size>        smallest size, K/M/G suffixes allowed (default 32M)\n"
      "  -e,--maxbytes <size>        largest size (default 32M)\n"
      "  -i,--stepbytes <size>       additive step (default 1M)\n"
      "  -f,--stepfactor <n>         multiplicative step, used when > 1 (default off)\n"
      "  -n,--iters <n>              timed iterations per size (default 20)\n"
      "  -w,--warmup_iters <n>       warm-up iterations (default 5)\n"
      "  -c,--check <n>              checked runs per size, 0 to skip the check (default 1)\n"
      "  -d,--datatype <type|all>    int8 uint8 int32 uint32 int64 uint64 half float double\n"
      "                              bfloat16 f8e4m3 f8e5m2 (default float)\n",
      prog, prog);
  if (collHasOp(coll))
    std::fprintf(f, "  -o,--op <op|all>            sum prod min max avg premulsum (default sum)\n");
  if (collHasRoot(coll))
    std::fprintf(f, "  -r,--root <rank|all>        root rank (default 0)\n");
  std::fprintf(f,
      "  -z,--blocking <0/1>         accepted; host collectives always block\n"
      "  -a,--average <0/1/2/3>      time over ranks: rank 0 / avg / min / max (default 3)\n"
      "  -t,--nthreads 1, -g,--ngpus 1   accepted for compatibility (only 1)\n"
      "  --model                     add the cost model's columns: algorithm, predicted time,\n"
      "                              measured/predicted (out-of-place, in-place)\n"
      "  --alpha <seconds>           alpha for the printed prediction only (implies --model)\n"
      "  --beta <seconds/byte>       beta for the printed prediction only (implies --model)\n"
      "  --bw <GB/s>                 beta = 1 / (GB/s * 1e9), same as --beta (implies --model)\n"
      "  -h,--help\n");
}

}  // namespace

int parsePerfArgs(int argc, char** argv, Coll coll, PerfArgs* a) {
  static const struct option longopts[] = {
      {"minbytes", required_argument, nullptr, 'b'},  {"maxbytes", required_argument, nullptr, 'e'},
      {"stepbytes", required_argument, nullptr, 'i'}, {"stepfactor", required_argument, nullptr, 'f'},
      {"iters", required_argument, nullptr, 'n'},     {"warmup_iters", required_argument, nullptr, 'w'},
      {"check", required_argument, nullptr, 'c'},     {"op", required_argument, nullptr, 'o'},
      {"datatype", required_argument, nullptr, 'd'},  {"root", required_argument, nullptr, 'r'},
      {"blocking", required_argument, nullptr, 'z'},  {"average", required_argument, nullptr, 'a'},
      {"nthreads", required_argument, nullptr, 't'},  {"ngpus", required_argument, nullptr, 'g'},
      {"help", no_argument, nullptr, 'h'},            {"model", no_argument, nullptr, kOptModel},
      {"alpha", required_argument, nullptr, kOptAlpha}, {"beta", required_argument, nullptr, kOptBeta},
      {"bw", required_argument, nullptr, kOptBw},     {nullptr, 0, nullptr, 0}};
  const char* prog = argc > 0 ? argv[0] : "perf";
  if (const char* slash = std::strrchr(prog, '/')) prog = slash + 1;
  auto bad = [&](const char* what, const char* val) {
    std::fprintf(stderr, "%s: invalid value '%s' for %s (see -h)\n", prog, val ? val : "", what);
    return 2;
  };
  optind = 1;
  opterr = 0;
  int c;
  long v;
  while ((c = getopt_long(argc, argv, ":b:e:i:f:n:w:c:o:d:r:z:a:t:g:h", longopts, nullptr)) != -1) {
    switch (c) {
      case 'b': if (!parseSize(optarg, &a->minBytes)) return bad("-b minbytes", optarg); break;
      case 'e': if (!parseSize(optarg, &a->maxBytes)) return bad("-e maxbytes", optarg); break;
      case 'i':
        if (!parseSize(optarg, &a->stepBytes) || a->stepBytes == 0) return bad("-i stepbytes", optarg);
        break;
      case 'f':
        if (!parseInt(optarg, 1, 1 << 20, &v)) return bad("-f stepfactor (integer >= 1)", optarg);
        a->stepFactor = static_cast<size_t>(v);
        break;
      case 'n': if (!parseInt(optarg, 1, 1 << 30, &v)) return bad("-n iters (>= 1)", optarg); a->iters = int(v); break;
      case 'w': if (!parseInt(optarg, 0, 1 << 30, &v)) return bad("-w warmup_iters (>= 0)", optarg); a->warmup = int(v); break;
      case 'c': if (!parseInt(optarg, 0, 1 << 20, &v)) return bad("-c check (>= 0)", optarg); a->check = int(v); break;
      case 'z': if (!parseInt(optarg, 0, 1, &v)) return bad("-z blocking (0 or 1)", optarg); a->blocking = int(v); break;
      case 'a': if (!parseInt(optarg, 0, 3, &v)) return bad("-a average (0..3)", optarg); a->average = int(v); break;
      case 't': if (!parseInt(optarg, 1, 1, &v)) return bad("-t nthreads (only 1 is supported)", optarg); break;
      case 'g': if (!parseInt(optarg, 1, 1, &v)) return bad("-g ngpus (only 1 is supported)", optarg); break;
      case 'o': if (!parseRedOps(optarg, &a->ops)) return bad("-o op (sum|prod|min|max|avg|premulsum|all)", optarg); break;
      case 'd': if (!parseDtypes(optarg, &a->dtypes)) return bad("-d datatype", optarg); break;
      case 'r':
        if (std::strcmp(optarg, "all") == 0) {
          a->allRoots = true;
        } else {
          if (!parseInt(optarg, 0, std::numeric_limits<int>::max(), &v)) return bad("-r root", optarg);
          a->root = int(v);
          a->allRoots = false;
        }
        break;
      case kOptModel: a->model = true; break;
      case kOptAlpha:
        if (!parseDouble(optarg, 0, 10, &a->alpha)) return bad("--alpha (seconds, e.g. 5e-7)", optarg);
        a->model = true;
        break;
      case kOptBeta:
        if (!parseDouble(optarg, 1e-18, 1, &a->beta)) return bad("--beta (seconds per byte, e.g. 1e-10)", optarg);
        a->model = true;
        break;
      case kOptBw: {
        double gbs = 0;
        if (!parseDouble(optarg, 1e-9, 1e9, &gbs)) return bad("--bw (GB/s, e.g. 10)", optarg);
        a->beta = 1.0 / (gbs * 1e9);
        a->model = true;
        break;
      }
      case 'h':
        usage(prog, coll, stdout);
        return 0;
      case ':':
        if (optopt >= kOptModel) std::fprintf(stderr, "%s: option %s needs a value (see -h)\n", prog, argv[optind - 1]);
        else std::fprintf(stderr, "%s: option -%c needs a value (see -h)\n", prog, optopt);
        return 2;
      default:
        if (optopt) std::fprintf(stderr, "%s: unknown option -%c (see -h)\n", prog, optopt);
        else std::fprintf(stderr, "%s: unknown option '%s' (see -h)\n", prog, argv[optind - 1]);
        return 2;
    }
  }
  if (optind < argc) {
    std::fprintf(stderr, "%s: unexpected argument '%s' (see -h)\n", prog, argv[optind]);
    return 2;
  }
  if (a->minBytes > a->maxBytes) {
    std::fprintf(stderr, "%s: invalid sizes: minbytes %zu > maxbytes %zu\n", prog, a->minBytes, a->maxBytes);
    return 2;
  }
  return -1;
}

std::vector<size_t> sweepSizes(const PerfArgs& a) {
  std::vector<size_t> sizes;
  size_t s = a.minBytes;
  while (s <= a.maxBytes) {
    sizes.push_back(s);
    size_t next;
    if (a.stepFactor > 1) {
      if (s == 0) next = 1;
      else if (s > std::numeric_limits<size_t>::max() / a.stepFactor) break;
      else next = s * a.stepFactor;
    } else {
      if (s > std::numeric_limits<size_t>::max() - a.stepBytes) break;
      next = s + a.stepBytes;
    }
    s = next;
  }
  return sizes;
}

}  // namespace collperf
