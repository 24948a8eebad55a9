// gloo_coll_perf.cc — Gloo's collectives timed the way our perf tools time
// ours, printing the same table (peer_common.h): float32 sum, per cell W
// untimed warm-up calls, a barrier, then the average of N calls per rank, the
// max over ranks; then (-c 1) one call on fresh data, checked exactly.
//
// Algorithms (-a):
//   allreduce: ring_chunked (default; gloo::AllreduceRingChunked:
//              reduce-scatter + all-gather in chunks, the bandwidth-optimal
//              ring) or ring (gloo::AllreduceRing: the whole buffer goes
//              around the ring, N-1 steps of S bytes each).
//   allgather: ring (gloo::AllgatherRing).
//   broadcast: one_to_all (default; gloo::BroadcastOneToAll: the root sends
//              to every rank) or binomial (gloo::broadcast, the current API: a
//              binomial tree over "unbound" buffers).
// All-reduce and one_to_all are in-place only: their out-of-place column
// copies the input into the output first (inside the timed loop), as a
// caller of an in-place API must.  AllgatherRing is out-of-place; its
// in-place column passes the rank's own chunk of the output as the input
// (Gloo then copies that chunk onto itself).
// Note on loopback: Gloo 0.5.0 (Debian's 2022-05 snapshot) sets SO_SNDBUF to
// the size of the first message on a pair (a small notification, so the
// kernel minimum, 4.6 KB, locked) and, for unbound buffers (binomial), never
// raises it; with lo's 64 KiB MTU every segment then waits for a delayed ACK
// (~40 ms per 64 KiB).  The bound-buffer algorithms above raise it per send.
// The algorithm objects / option structs are built once per cell, over the
// same two buffers (MAXBYTES each) for every size.
//
// Transport: gloo's tcp device, bound to -i IFACE (default
// $COLL_SOCKET_IFNAME, else lo) or -H ADDRESS.  Gloo has no shared-memory
// transport.  Rendezvous: gloo::rendezvous::FileStore in -S DIR (default
// $GLOO_STORE_DIR), a fresh directory per job that every rank can reach
// (works across network namespaces of one machine: it is the file system).
// Rank and size: $COLL_RANK/$COLL_NRANKS (collrun, tools/netsim run), else
// $OMPI_COMM_WORLD_RANK/_SIZE, else $RANK/$WORLD_SIZE.
//
// Usage: collrun -n N -- gloo_coll_perf -C allreduce -S /tmp/store -b 8 -e 64M -f 2
#include <gloo/algorithm.h>
#include <gloo/allgather_ring.h>
#include <gloo/allreduce_ring.h>
#include <gloo/allreduce_ring_chunked.h>
#include <gloo/barrier.h>
#include <gloo/broadcast.h>
#include <gloo/broadcast_one_to_all.h>
#include <gloo/config.h>
#include <gloo/rendezvous/context.h>
#include <gloo/rendezvous/file_store.h>
#include <gloo/transport/tcp/device.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <memory>
#include <string>
#include <vector>

#include "peer_common.h"

namespace {

int envInt(const char* a, const char* b, const char* c, int dflt) {
  for (const char* name : {a, b, c}) {
    const char* v = std::getenv(name);
    if (v && *v) return std::atoi(v);
  }
  return dflt;
}

double allreduceDouble(const std::shared_ptr<gloo::Context>& ctx, double v, bool max) {
  gloo::AllreduceRing<double> ar(ctx, {&v}, 1,
                                 max ? gloo::ReductionFunction<double>::max : gloo::ReductionFunction<double>::sum);
  ar.run();
  return v;
}

void barrier(const std::shared_ptr<gloo::Context>& ctx) {
  gloo::BarrierOptions o(ctx);
  gloo::barrier(o);
}

// One collective at one size in one layout, set up once, called many times.
class Cell {
 public:
  Cell(const std::shared_ptr<gloo::Context>& ctx, const peer_args& a, const std::string& algo, size_t count,
       bool inplace, float* send, float* recv)
      : a_(a), algo_(algo), count_(count), inplace_(inplace), send_(send), recv_(recv) {
    const int rank = ctx->rank;
    if (count == 0) return;  // nothing to move: a no-op, like a 0-byte call
    switch (a.coll) {
      case PEER_ALLREDUCE:
        if (algo == "ring")
          algo_obj_ = std::make_unique<gloo::AllreduceRing<float>>(ctx, std::vector<float*>{recv}, (int)count);
        else
          algo_obj_ = std::make_unique<gloo::AllreduceRingChunked<float>>(ctx, std::vector<float*>{recv}, (int)count);
        break;
      case PEER_ALLGATHER: {
        const float* in = inplace ? recv + (size_t)rank * count : send;
        gather_ = true;
        algo_obj_ = std::make_unique<gloo::AllgatherRing<float>>(ctx, std::vector<const float*>{in}, recv, (int)count);
        break;
      }
      case PEER_REDUCESCATTER:
        break;  // refused in main()
      case PEER_BROADCAST:
        if (algo == "one_to_all") {
          algo_obj_ = std::make_unique<gloo::BroadcastOneToAll<float>>(ctx, std::vector<float*>{recv}, count, a.root);
        } else {
          bc_ = std::make_unique<gloo::BroadcastOptions>(ctx);
          if (!inplace && rank == a.root) bc_->setInput<float>(send, count);
          bc_->setOutput<float>(recv, count);
          bc_->setRoot(a.root);
          bc_->setTimeout(std::chrono::seconds(a.timeout_s));
        }
        break;
    }
    rank_ = rank;
  }

  void run() {
    if (count_ == 0) return;
    if (algo_obj_) {
      // In-place-only algorithms: out-of-place = the copy a caller must make.
      const bool copy = !gather_ && !inplace_ && (a_.coll == PEER_ALLREDUCE || rank_ == a_.root);
      if (copy) std::memcpy(recv_, send_, count_ * sizeof(float));
      algo_obj_->run();
    } else {
      gloo::broadcast(*bc_);
    }
  }

 private:
  const peer_args& a_;
  std::string algo_;
  size_t count_;
  bool inplace_;
  float* send_;
  float* recv_;
  int rank_ = 0;
  bool gather_ = false;
  std::unique_ptr<gloo::Algorithm> algo_obj_;
  std::unique_ptr<gloo::BroadcastOptions> bc_;
};

int realMain(int argc, char** argv) {
  setvbuf(stdout, nullptr, _IOLBF, 0);
  peer_args a;
  if (peer_parse_args(argc, argv, &a) != 0) return 2;
  const int rank = envInt("COLL_RANK", "OMPI_COMM_WORLD_RANK", "RANK", 0);
  const int nranks = envInt("COLL_NRANKS", "OMPI_COMM_WORLD_SIZE", "WORLD_SIZE", 1);
  if (nranks < 1 || rank < 0 || rank >= nranks) {
    std::fprintf(stderr, "gloo_coll_perf: bad rank %d / size %d\n", rank, nranks);
    return 2;
  }
  if (a.root >= nranks) {
    std::fprintf(stderr, "gloo_coll_perf: root %d but %d ranks\n", a.root, nranks);
    return 2;
  }
  if (a.coll == PEER_REDUCESCATTER) {
    std::fprintf(stderr, "gloo_coll_perf: no reduce-scatter in this harness (Gloo 0.5.0's is the legacy "
                         "ReduceScatterHalvingDoubling; not wired up)\n");
    return 2;
  }
  std::string algo = a.algo ? a.algo : "";
  if (algo.empty()) algo = a.coll == PEER_ALLREDUCE ? "ring_chunked" : a.coll == PEER_ALLGATHER ? "ring" : "one_to_all";
  const bool algoOk = a.coll == PEER_ALLREDUCE   ? (algo == "ring" || algo == "ring_chunked")
                      : a.coll == PEER_ALLGATHER ? algo == "ring"
                                                 : (algo == "binomial" || algo == "one_to_all");
  if (!algoOk) {
    std::fprintf(stderr, "gloo_coll_perf: no algorithm '%s' for %s\n", algo.c_str(), peer_coll_name(a.coll));
    return 2;
  }
  if (a.max_bytes / 4 > 0x7fffffff) {
    std::fprintf(stderr, "gloo_coll_perf: MAXBYTES too large for an int count\n");
    return 2;
  }
  std::string store = a.store ? a.store : (std::getenv("GLOO_STORE_DIR") ? std::getenv("GLOO_STORE_DIR") : "");
  if (store.empty()) {
    std::fprintf(stderr, "gloo_coll_perf: give a rendezvous directory (-S DIR or GLOO_STORE_DIR), fresh per job\n");
    return 2;
  }

  gloo::transport::tcp::attr attr;
  std::string where;
  if (a.host) {
    attr.hostname = a.host;
    where = std::string("address ") + a.host;
  } else {
    const char* ifEnv = std::getenv("COLL_SOCKET_IFNAME");
    attr.iface = a.iface ? a.iface : (ifEnv && *ifEnv ? ifEnv : "lo");
    where = "interface " + attr.iface;
  }
  auto dev = gloo::transport::tcp::CreateDevice(attr);
  gloo::rendezvous::FileStore fileStore(store);
  auto ctx = std::make_shared<gloo::rendezvous::Context>(rank, nranks);
  ctx->setTimeout(std::chrono::seconds(a.timeout_s));
  ctx->connectFullMesh(fileStore, dev);

  const size_t cap = (a.max_bytes + 63) / 64 * 64;
  float* send = static_cast<float*>(std::aligned_alloc(64, cap ? cap : 64));
  float* recv = static_cast<float*>(std::aligned_alloc(64, cap ? cap : 64));
  if (!send || !recv) throw std::bad_alloc();
  std::memset(send, 0, cap);
  std::memset(recv, 0, cap);

  if (rank == 0) {
    char what[512];
    std::snprintf(what, sizeof what, "Gloo %d.%d.%d %s (%s), tcp device %s (%s), %d ranks, float32 sum",
                  GLOO_VERSION_MAJOR, GLOO_VERSION_MINOR, GLOO_VERSION_PATCH, peer_coll_name(a.coll), algo.c_str(),
                  where.c_str(), dev->str().c_str(), nranks);
    peer_print_header(&a, what);
  }

  long failedRows = 0;
  unsigned long long wrongTotal = 0;
  double bwSum = 0;
  int bwCount = 0;
  for (size_t bytes = a.min_bytes; bytes <= a.max_bytes; bytes *= (size_t)a.factor) {
    const peer_sizes ps = peer_sizes_of(a.coll, bytes, nranks);
    if (rank == 0) peer_print_row_start(a.coll, ps.size_bytes, ps.count, a.root);
    for (int inplace = 0; inplace < 2; ++inplace) {
      Cell cell(ctx, a, algo, ps.count, inplace != 0, send, recv);
      // Gloo's algorithms may receive a fast peer's data into our output as
      // soon as that peer starts: fill, then a barrier, then the calls.
      peer_fill(a.coll, rank, nranks, a.root, ps.count, inplace, inplace, send, recv);
      barrier(ctx);
      for (int w = 0; w < a.warmup; ++w) cell.run();
      barrier(ctx);
      const auto t0 = std::chrono::steady_clock::now();
      for (int it = 0; it < a.iters; ++it) cell.run();
      const auto t1 = std::chrono::steady_clock::now();
      const double sec = allreduceDouble(ctx, std::chrono::duration<double>(t1 - t0).count() / a.iters, true);
      unsigned long long wrong = 0;
      for (int k = 0; k < a.check && !wrong; ++k) {
        peer_fill(a.coll, rank, nranks, a.root, ps.count, inplace, 0, send, recv);
        barrier(ctx);
        cell.run();
        const double mine = static_cast<double>(peer_verify(a.coll, rank, nranks, a.root, ps.count, recv));
        wrong = static_cast<unsigned long long>(allreduceDouble(ctx, mine, false));
      }
      if (wrong) {
        ++failedRows;
        wrongTotal += wrong;
      }
      if (rank == 0) bwSum += peer_print_cell(&a, &ps, sec, wrong);
      ++bwCount;
    }
    if (rank == 0) std::printf("\n");
    if (bytes > a.max_bytes / (size_t)a.factor) break;
  }
  if (rank == 0) peer_print_footer(failedRows, bwSum, bwCount, wrongTotal);
  barrier(ctx);
  std::free(send);
  std::free(recv);
  return wrongTotal ? 1 : 0;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return realMain(argc, argv);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "gloo_coll_perf: %s\n", e.what());
    return 1;
  }
}
