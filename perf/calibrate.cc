// calibrate — measures the cost model's alpha and beta for the transport in
// use and writes them to a file the tuner loads with COLL_COST_FILE=FILE
// (format: libcoll/src/tuner/cost_file.h).  Run it like a perf tool:
//
//   build/tools/collrun -n 2 -- build/perf/calibrate --out coll-cost-shm.txt
//   COLL_TRANSPORT=socket build/tools/collrun -n 2 -- build/perf/calibrate
//
// alpha: ping-pong of small messages (collSend/collRecv) between rank 0 and
//   every other rank in turn: half the round trip, median of many.
// beta:  rank 0 streams a large message (64 MiB) to each peer, which answers
//   with a small one; (median round trip - the model's hops * alpha) / bytes.
// fit:   an all-reduce sweep timed like the perf tools; alpha and beta are
//   the least-squares fit (relative error) of the tuner's own terms
//   (collGetPlanInfo: hops, byteTerm) to the measured times.
// --link-rate RATE (e.g. 1gbit, as tools/netsim takes it) prints the
// configured rate's beta beside the measured one.
#include <coll.h>
#include <getopt.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <string>
#include <vector>

#include "coll/base/env.h"
#include "common/args.h"

namespace {

using Clock = std::chrono::steady_clock;

struct Options {
  std::string out;  // "" = coll-cost-<transport>.txt
  int pingIters = 2000;
  size_t pingBytes = 8;
  size_t streamBytes = 64u << 20;
  int streamReps = 5;
  bool fit = true;
  size_t fitMaxBytes = 16u << 20;
  // Which alpha/beta the file's alpha/beta lines get: the fit where it
  // succeeded (auto, the default: it explained tools/costcheck's rows 21 of
  // 56 times on sockets where ping-pong/stream explained 3), else ping-pong
  // and stream.
  enum class Use { Auto, PingPong, Fit } use = Use::Auto;
  double linkBitsPerSec = 0;
  std::string linkRateText;
};

int rank = 0, nranks = 1;
collComm_t comm = nullptr;

[[noreturn]] void die(collResult_t r, const char* what) {
  std::fprintf(stderr, "calibrate: rank %d: %s failed: %s: %s\n", rank, what, collGetErrorString(r),
               collGetLastError(comm));
  std::exit(1);
}

void ok(collResult_t r, const char* what) {
  if (r != collSuccess) die(r, what);
}

void barrier() {
  int32_t one = 1, sum = 0;
  ok(collAllReduce(&one, &sum, 1, collInt32, collSum, comm, nullptr), "barrier");
}

double seconds(Clock::time_point a, Clock::time_point b) { return std::chrono::duration<double>(b - a).count(); }

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

// Rates as tc/netsim write them (1gbit, 100mbit, 10mbps = bytes/s), parsed
// as libcoll parses COLL_PORT_RATE.
bool parseRate(const char* name, const char* s, double* bitsPerSec) {
  auto r = coll::env::parseRateBitsPerSec(name, s);
  if (!r.isOk()) return false;
  *bitsPerSec = r.value();
  return true;
}

void usage(FILE* f) {
  std::fprintf(f,
      "USAGE: collrun -n N [-x COLL_TRANSPORT=shm|socket] -- calibrate [options]   (N >= 2)\n"
      "  --out FILE            where to write (default coll-cost-<transport>.txt in the current directory)\n"
      "  --ping-iters N        ping-pong round trips per peer (default 2000)\n"
      "  --ping-bytes SIZE     ping-pong message size (default 8)\n"
      "  --stream-bytes SIZE   streamed message size (default 64M)\n"
      "  --stream-reps N       streamed messages per peer (default 5)\n"
      "  --fit-max SIZE        largest size of the all-reduce fit sweep (default 16M)\n"
      "  --no-fit              skip the all-reduce fit\n"
      "  --use auto|fit|pingpong  which alpha/beta the file's alpha/beta lines get (default auto: the fit\n"
      "                        where it succeeded, else ping-pong and stream)\n"
      "  --link-rate RATE      configured link rate (1gbit, 100mbit, bits/s): print its beta beside the measured one\n"
      "                        (default: COLL_PORT_RATE, which tools/netsim sets)\n"
      "  -h, --help\n"
      "Then: COLL_COST_FILE=FILE makes the tuner use the file's alpha/beta for that transport.\n");
}

int parseOptions(int argc, char** argv, Options* o) {
  enum { kOut = 1000, kPingIters, kPingBytes, kStreamBytes, kStreamReps, kFitMax, kNoFit, kUse, kLinkRate };
  static const struct option longopts[] = {
      {"out", required_argument, nullptr, kOut},
      {"ping-iters", required_argument, nullptr, kPingIters},
      {"ping-bytes", required_argument, nullptr, kPingBytes},
      {"stream-bytes", required_argument, nullptr, kStreamBytes},
      {"stream-reps", required_argument, nullptr, kStreamReps},
      {"fit-max", required_argument, nullptr, kFitMax},
      {"no-fit", no_argument, nullptr, kNoFit},
      {"use", required_argument, nullptr, kUse},
      {"link-rate", required_argument, nullptr, kLinkRate},
      {"help", no_argument, nullptr, 'h'},
      {nullptr, 0, nullptr, 0}};
  opterr = 0;
  int c;
  auto bad = [](const char* what, const char* val) {
    std::fprintf(stderr, "calibrate: invalid value '%s' for %s (see -h)\n", val ? val : "", what);
    return 2;
  };
  while ((c = getopt_long(argc, argv, ":h", longopts, nullptr)) != -1) {
    switch (c) {
      case kOut: o->out = optarg; break;
      case kPingIters: {
        long v = std::strtol(optarg, nullptr, 10);
        if (v < 10 || v > 10000000) return bad("--ping-iters (10 .. 1e7)", optarg);
        o->pingIters = static_cast<int>(v);
        break;
      }
      case kPingBytes:
        if (!collperf::parseSize(optarg, &o->pingBytes) || o->pingBytes == 0 || o->pingBytes > (1u << 20))
          return bad("--ping-bytes (1 .. 1M)", optarg);
        break;
      case kStreamBytes:
        if (!collperf::parseSize(optarg, &o->streamBytes) || o->streamBytes < 4096 || o->streamBytes > (size_t{4} << 30))
          return bad("--stream-bytes (4K .. 4G)", optarg);
        break;
      case kStreamReps: {
        long v = std::strtol(optarg, nullptr, 10);
        if (v < 1 || v > 1000) return bad("--stream-reps (1 .. 1000)", optarg);
        o->streamReps = static_cast<int>(v);
        break;
      }
      case kFitMax:
        if (!collperf::parseSize(optarg, &o->fitMaxBytes) || o->fitMaxBytes < 1024 || o->fitMaxBytes > (size_t{4} << 30))
          return bad("--fit-max (1K .. 4G)", optarg);
        break;
      case kNoFit: o->fit = false; break;
      case kUse:
        if (std::strcmp(optarg, "fit") == 0) o->use = Options::Use::Fit;
        else if (std::strcmp(optarg, "pingpong") == 0) o->use = Options::Use::PingPong;
        else if (std::strcmp(optarg, "auto") == 0) o->use = Options::Use::Auto;
        else return bad("--use (auto, fit or pingpong)", optarg);
        break;
      case kLinkRate:
        if (!parseRate("--link-rate", optarg, &o->linkBitsPerSec)) return bad("--link-rate (e.g. 1gbit, 100mbit, 1e9)", optarg);
        o->linkRateText = optarg;
        break;
      case 'h': usage(stdout); return 0;
      case ':': std::fprintf(stderr, "calibrate: %s needs a value (see -h)\n", argv[optind - 1]); return 2;
      default: std::fprintf(stderr, "calibrate: unknown option '%s' (see -h)\n", argv[optind - 1]); return 2;
    }
  }
  if (optind < argc) {
    std::fprintf(stderr, "calibrate: unexpected argument '%s' (see -h)\n", argv[optind]);
    return 2;
  }
  if (o->use == Options::Use::Fit && !o->fit) {
    std::fprintf(stderr, "calibrate: --use fit needs the fit (drop --no-fit)\n");
    return 2;
  }
  // Under tools/netsim the ranks get the simulated links' rate.
  const char* portRate = std::getenv("COLL_PORT_RATE");
  if (o->linkBitsPerSec == 0 && portRate != nullptr && *portRate != '\0') {
    if (!parseRate("COLL_PORT_RATE", portRate, &o->linkBitsPerSec)) {
      std::fprintf(stderr, "calibrate: COLL_PORT_RATE='%s' is not a rate (e.g. 1gbit)\n", portRate);
      return 2;
    }
    o->linkRateText = portRate;
  }
  return -1;
}

// Half round trips of `bytes` between rank 0 and `peer` (seconds, on rank 0).
std::vector<double> pingPong(int peer, size_t bytes, int iters, std::vector<char>& buf) {
  std::vector<double> half;
  if (rank != 0 && rank != peer) return half;
  const int other = rank == 0 ? peer : 0;
  const int warm = std::max(10, iters / 10);
  half.reserve(static_cast<size_t>(iters));
  for (int i = 0; i < warm + iters; ++i) {
    if (rank == 0) {
      auto t0 = Clock::now();
      ok(collSend(buf.data(), bytes, collUint8, other, comm, nullptr), "collSend");
      ok(collRecv(buf.data(), bytes, collUint8, other, comm, nullptr), "collRecv");
      auto t1 = Clock::now();
      if (i >= warm) half.push_back(seconds(t0, t1) / 2);
    } else {
      ok(collRecv(buf.data(), bytes, collUint8, other, comm, nullptr), "collRecv");
      ok(collSend(buf.data(), bytes, collUint8, other, comm, nullptr), "collSend");
    }
  }
  return half;
}

// Round trips of (bytes there, 8 bytes back) between rank 0 and `peer`.
std::vector<double> stream(int peer, size_t bytes, int reps, std::vector<char>& buf) {
  std::vector<double> rtt;
  if (rank != 0 && rank != peer) return rtt;
  const int other = rank == 0 ? peer : 0;
  char ack[8] = {0};
  for (int i = 0; i < reps + 1; ++i) {  // the first one warms the pages and FIFOs
    if (rank == 0) {
      auto t0 = Clock::now();
      ok(collSend(buf.data(), bytes, collUint8, other, comm, nullptr), "collSend");
      ok(collRecv(ack, sizeof ack, collUint8, other, comm, nullptr), "collRecv");
      auto t1 = Clock::now();
      if (i > 0) rtt.push_back(seconds(t0, t1));
    } else {
      ok(collRecv(buf.data(), bytes, collUint8, other, comm, nullptr), "collRecv");
      ok(collSend(ack, sizeof ack, collUint8, other, comm, nullptr), "collSend");
    }
  }
  return rtt;
}

collPlanInfo_t plan(collCollective_t k, size_t count, int root) {
  collPlanInfo_t p;
  ok(collGetPlanInfo(comm, k, count, collUint8, root, &p), "collGetPlanInfo");
  return p;
}

struct FitPoint {
  size_t bytes;
  double seconds;
  collPlanInfo_t plan;
};

// All-reduce (float sum) times as the perf tools take them: the max over
// ranks of the average of a batch, the median of 3 batches.
std::vector<FitPoint> allReduceSweep(size_t maxBytes) {
  std::vector<FitPoint> pts;
  std::vector<float> in(maxBytes / 4 + 1, 1.0f), out(maxBytes / 4 + 1);
  for (size_t bytes = 8; bytes <= maxBytes; bytes *= 4) {
    const size_t count = bytes / 4;
    // Iterations for ~20 ms per batch, decided from a trial on rank 0 and
    // shared (every rank must make the same number of calls).
    barrier();
    auto t0 = Clock::now();
    ok(collAllReduce(in.data(), out.data(), count, collFloat32, collSum, comm, nullptr), "collAllReduce");
    double once = seconds(t0, Clock::now());
    double maxOnce = 0;
    ok(collAllReduce(&once, &maxOnce, 1, collFloat64, collMax, comm, nullptr), "collAllReduce");
    const int iters = static_cast<int>(std::clamp(0.02 / std::max(maxOnce, 1e-9), 3.0, 20000.0));
    std::vector<double> batches;
    for (int b = 0; b < 3; ++b) {
      barrier();
      auto s0 = Clock::now();
      for (int i = 0; i < iters; ++i)
        ok(collAllReduce(in.data(), out.data(), count, collFloat32, collSum, comm, nullptr), "collAllReduce");
      double t = seconds(s0, Clock::now()) / iters, tmax = 0;
      ok(collAllReduce(&t, &tmax, 1, collFloat64, collMax, comm, nullptr), "collAllReduce");
      batches.push_back(tmax);
    }
    collPlanInfo_t p;
    ok(collGetPlanInfo(comm, collCollAllReduce, count, collFloat32, -1, &p), "collGetPlanInfo");
    pts.push_back({bytes, median(batches), p});
  }
  return pts;
}

// Least squares of T_i = h_i a + b_i beta with relative residuals
// ((h a + b beta - T) / T), i.e. weights 1/T^2.  False if singular or
// either parameter comes out negative.
bool fitAlphaBeta(const std::vector<FitPoint>& pts, double* alpha, double* beta) {
  double shh = 0, shb = 0, sbb = 0, sht = 0, sbt = 0;
  for (const FitPoint& p : pts) {
    if (p.seconds <= 0) continue;
    const double w = 1.0 / (p.seconds * p.seconds);
    const double h = p.plan.hops, b = p.plan.byteTerm, t = p.seconds;
    shh += w * h * h;
    shb += w * h * b;
    sbb += w * b * b;
    sht += w * h * t;
    sbt += w * b * t;
  }
  const double det = shh * sbb - shb * shb;
  if (!(std::fabs(det) > 0)) return false;
  *alpha = (sht * sbb - sbt * shb) / det;
  *beta = (shh * sbt - shb * sht) / det;
  return *alpha >= 0 && *beta > 0 && std::isfinite(*alpha) && std::isfinite(*beta);
}

std::string utcNow() {
  char buf[64];
  std::time_t t = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&t, &tm);
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

std::string sizeText(size_t b) {
  char buf[32];
  if (b >= (1u << 20) && b % (1u << 20) == 0) std::snprintf(buf, sizeof buf, "%zu MiB", b >> 20);
  else if (b >= 1024 && b % 1024 == 0) std::snprintf(buf, sizeof buf, "%zu KiB", b >> 10);
  else std::snprintf(buf, sizeof buf, "%zu B", b);
  return buf;
}

}  // namespace

int main(int argc, char** argv) {
  setvbuf(stdout, nullptr, _IOLBF, 0);
  Options o;
  if (int rc = parseOptions(argc, argv, &o); rc >= 0) return rc;

  collResult_t res = collCommInitFromEnv(&comm);
  if (res != collSuccess) {
    std::fprintf(stderr, "calibrate: collCommInitFromEnv failed: %s: %s\n", collGetErrorString(res),
                 collGetLastError(nullptr));
    return 1;
  }
  ok(collCommUserRank(comm, &rank), "collCommUserRank");
  ok(collCommCount(comm, &nranks), "collCommCount");
  if (nranks < 2) {
    std::fprintf(stderr, "calibrate: needs at least 2 ranks (collrun -n 2 -- calibrate)\n");
    collCommDestroy(comm);
    return 2;
  }
  const collPlanInfo_t now = plan(collCollSend, o.streamBytes, (rank + 1) % nranks);
  const std::string transport = now.transport;
  if (rank == 0) {
    std::printf("# calibrate: transport %s, %d ranks; the tuner uses alpha %.3g s, beta %.4g s/B (%.2f GB/s) from %s\n",
                now.transport, nranks, now.alpha, now.beta, 1e-9 / now.beta, now.costSource);
  }

  // 1. alpha: ping-pong with every peer of rank 0 in turn.
  std::vector<char> buf(std::max(o.streamBytes, o.pingBytes), 1);
  std::vector<double> alphas;
  for (int peer = 1; peer < nranks; ++peer) {
    barrier();
    std::vector<double> half = pingPong(peer, o.pingBytes, o.pingIters, buf);
    if (rank == 0) {
      const double m = median(half);
      alphas.push_back(m);
      std::sort(half.begin(), half.end());
      std::printf("# ping-pong 0<->%d: %s, %d round trips: half round trip median %.3f us (p10 %.3f, p90 %.3f)\n", peer,
                  sizeText(o.pingBytes).c_str(), o.pingIters, m * 1e6, half[half.size() / 10] * 1e6,
                  half[half.size() * 9 / 10] * 1e6);
    }
  }
  // The small message's own bytes are negligible (8 B at >= 0.1 GB/s: < 0.1 us).
  double alpha = median(alphas);
  ok(collBroadcast(&alpha, &alpha, 1, collFloat64, 0, comm, nullptr), "collBroadcast");

  // 2. beta: stream large messages.
  std::vector<double> betas;
  const collPlanInfo_t sp = plan(collCollSend, o.streamBytes, 1);
  for (int peer = 1; peer < nranks; ++peer) {
    barrier();
    std::vector<double> rtt = stream(peer, o.streamBytes, o.streamReps, buf);
    if (rank == 0) {
      const double m = median(rtt);
      // T = (hops of the big message + 1 for the ack) * alpha + S * beta.
      const double b = std::max(m - (sp.hops + 1) * alpha, m * 0.5) / static_cast<double>(o.streamBytes);
      betas.push_back(b);
      std::printf("# stream 0->%d: %s x %d: median %.3f ms, %.3f GB/s; beta %.4g s/B (after %.0f hops x alpha)\n", peer,
                  sizeText(o.streamBytes).c_str(), o.streamReps, m * 1e3, o.streamBytes / m / 1e9, b, sp.hops + 1);
    }
  }
  double beta = median(betas);
  ok(collBroadcast(&beta, &beta, 1, collFloat64, 0, comm, nullptr), "collBroadcast");

  // 3. fit from an all-reduce sweep, with the tuner's own terms.
  double fitAlpha = 0, fitBeta = 0;
  bool haveFit = false;
  std::vector<FitPoint> pts;
  if (o.fit) {
    barrier();
    pts = allReduceSweep(o.fitMaxBytes);
    haveFit = fitAlphaBeta(pts, &fitAlpha, &fitBeta);
    if (rank == 0) {
      std::printf("# all-reduce sweep (float sum, max over ranks, median of 3 batches), predictions with each alpha/beta:\n");
      std::printf("# %10s  %8s  %10s  %10s  %8s  %10s  %8s\n", "size(B)", "algo", "meas(us)", "ping(us)", "ratio",
                  "fit(us)", "ratio");
      for (const FitPoint& p : pts) {
        const double pp = p.plan.hops * alpha + p.plan.byteTerm * beta;
        const double pf = p.plan.hops * fitAlpha + p.plan.byteTerm * fitBeta;
        std::printf("  %10zu  %8s  %10.2f  %10.2f  %8.3f  %10.2f  %8.3f\n", p.bytes, p.plan.algorithm, p.seconds * 1e6,
                    pp * 1e6, p.seconds / pp, haveFit ? pf * 1e6 : 0.0, haveFit ? p.seconds / pf : 0.0);
      }
      if (haveFit) std::printf("# fit: alpha %.4g s, beta %.4g s/B (%.2f GB/s)\n", fitAlpha, fitBeta, 1e-9 / fitBeta);
      else std::printf("# fit: no usable fit (singular, or a negative parameter)\n");
    }
  }
  const bool useFit = haveFit && o.use != Options::Use::PingPong;
  if (o.use == Options::Use::Fit && !haveFit) {
    if (rank == 0) std::fprintf(stderr, "calibrate: --use fit, but the fit failed; nothing written\n");
    collCommDestroy(comm);
    return 1;
  }

  int rc = 0;
  if (rank == 0) {
    const double outAlpha = useFit ? fitAlpha : alpha, outBeta = useFit ? fitBeta : beta;
    std::printf("# measured: alpha %.4g s (%.3f us), beta %.4g s/B (%.3f GB/s)%s\n", outAlpha, outAlpha * 1e6, outBeta,
                1e-9 / outBeta,
                useFit                             ? " (from the fit)"
                : o.use == Options::Use::PingPong ? " (ping-pong and stream, --use pingpong)"
                                                   : " (ping-pong and stream: no usable fit)");
    std::printf("# stated by the transport / in use before: alpha %.4g s, beta %.4g s/B (%.3f GB/s); measured/stated: "
                "alpha %.2f, beta %.2f\n",
                now.alpha, now.beta, 1e-9 / now.beta, outAlpha / now.alpha, outBeta / now.beta);
    if (o.linkBitsPerSec > 0) {
      const double linkBeta = 8.0 / o.linkBitsPerSec;
      std::printf("# link rate %s: beta %.4g s/B (%.4f GB/s); measured beta %.4g s/B; measured/configured %.3f "
                  "(goodput %.1f%% of the line rate)\n",
                  o.linkRateText.c_str(), linkBeta, 1e-9 / linkBeta, outBeta, outBeta / linkBeta,
                  100.0 * linkBeta / outBeta);
    }
    std::string path = o.out;
    if (path.empty()) {
      path = "coll-cost-";
      path += transport == "shm+socket" ? "mixed" : transport;
      path += ".txt";
    }
    FILE* f = std::fopen(path.c_str(), "w");
    if (f == nullptr) {
      std::fprintf(stderr, "calibrate: cannot write %s: %s\n", path.c_str(), std::strerror(errno));
      rc = 1;
    } else {
      char host[256] = {0};
      gethostname(host, sizeof host - 1);
      std::fprintf(f, "# libcoll cost calibration (perf/calibrate); load with COLL_COST_FILE=%s\n", path.c_str());
      std::fprintf(f, "format 1\n");
      std::fprintf(f, "transport %s\n", transport.c_str());
      std::fprintf(f, "alpha %.6g\n", outAlpha);
      std::fprintf(f, "beta %.6g\n", outBeta);
      std::fprintf(f, "host %s\n", host);
      std::fprintf(f, "nranks %d\n", nranks);
      std::fprintf(f, "date %s\n", utcNow().c_str());
      if (useFit)
        std::fprintf(f, "method least-squares fit (relative error) of the tuner's terms to an all-reduce sweep 8 B .. %s\n",
                     sizeText(o.fitMaxBytes).c_str());
      else
        std::fprintf(f,
                     "method alpha: median half round trip of %d ping-pongs of %s (collSend/collRecv, rank 0 with each "
                     "peer); beta: median of %d round trips of %s there + 8 B back, minus hops x alpha\n",
                     o.pingIters, sizeText(o.pingBytes).c_str(), o.streamReps, sizeText(o.streamBytes).c_str());
      std::fprintf(f, "pingpong_alpha %.6g\n", alpha);
      std::fprintf(f, "stream_beta %.6g\n", beta);
      if (haveFit) {
        std::fprintf(f, "fit_alpha %.6g\n", fitAlpha);
        std::fprintf(f, "fit_beta %.6g\n", fitBeta);
      }
      if (o.linkBitsPerSec > 0) {
        std::fprintf(f, "link_rate %s\n", o.linkRateText.c_str());
        std::fprintf(f, "link_beta %.6g\n", 8.0 / o.linkBitsPerSec);
      }
      if (std::fclose(f) != 0) {
        std::fprintf(stderr, "calibrate: cannot write %s: %s\n", path.c_str(), std::strerror(errno));
        rc = 1;
      } else {
        std::printf("# wrote %s%s (use: COLL_COST_FILE=%s)\n", path.c_str(),
                    o.out.empty() ? " in the current directory (--out FILE to choose)" : "", path.c_str());
      }
    }
  }
  ok(collBroadcast(&rc, &rc, 1, collInt32, 0, comm, nullptr), "collBroadcast");
  ok(collCommDestroy(comm), "collCommDestroy");
  return rc;
}
