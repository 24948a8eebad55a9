// device_perf — collectives on CUDA device buffers, timed on the stream, in
// nccl-tests' layout, with the memory-traffic bound beside each row.
//
//   collrun -n N -- device_perf [-o allreduce|allgather|broadcast|reducescatter|sendrecv]
//                               [-b MINBYTES] [-e MAXBYTES] [-f FACTOR] [-n ITERS] [-w WARMUP]
//                               [--hbm GBPS]
//   device_perf -t N [same options]
//
// All ranks may share one GPU (rank r uses device r % count).  -t N: N
// ranks as threads of this one process (collCommInitAll), which takes the
// local device path (docs/ARCHITECTURE.md, "Ranks of one process").  Time: CUDA
// events around ITERS back-to-back calls on one stream after WARMUP calls,
// per call, the maximum over ranks.  sendrecv: a ring exchange, every rank
// sending S bytes to rank + 1 and receiving S from rank - 1 in one group
// (nccl-tests' sendrecv_perf), N >= 2.  One checked call per size (#wrong:
// elements that differ from the exact expected value; the inputs are small
// integers, so float sums are exact; any makes the exit status 1).
// "call(us)": the mean time a call took to return on the host in the timed
// loop, the maximum over ranks — the host only enqueues, so a call bound by
// its launches (or blocked by a full stream) shows there.
//
// "hbm GB/s" = bytes all ranks move through GPU memory per call (reads +
// writes, per the algorithm: bytesPerRank) /
// time, and "%bound" compares it with --hbm, by default this GPU's
// device-to-device copy counted as read + write, measured at start.  Meaningful when every rank
// is on one GPU; with several GPUs it is the sum over them.
#include <cuda_runtime.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "coll.h"
#include "schedule/device_stream_ops.h"

namespace {

thread_local int gRank = 0, gN = 1;
thread_local collComm_t gComm = nullptr;

#define CUDA_OK(x)                                                                                           \
  do {                                                                                                       \
    cudaError_t e_ = (x);                                                                                    \
    if (e_ != cudaSuccess) {                                                                                 \
      std::fprintf(stderr, "rank %d: %s:%d: %s: %s\n", gRank, __FILE__, __LINE__, #x, cudaGetErrorString(e_)); \
      std::exit(1);                                                                                          \
    }                                                                                                        \
  } while (0)
#define COLL_OK(x)                                                                                           \
  do {                                                                                                       \
    collResult_t r_ = (x);                                                                                   \
    if (r_ != collSuccess) {                                                                                 \
      std::fprintf(stderr, "rank %d: %s: %s\n", gRank, #x, collGetLastError(gComm));                        \
      std::exit(1);                                                                                          \
    }                                                                                                        \
  } while (0)

enum class Coll { AllReduce, AllGather, Broadcast, ReduceScatter, SendRecv };

bool parseBytes(const char* s, size_t* out) {
  char* end = nullptr;
  const double v = std::strtod(s, &end);
  if (end == s || v < 0) return false;
  double m = 1;
  if (*end == 'K' || *end == 'k') m = 1024.0, ++end;
  else if (*end == 'M' || *end == 'm') m = 1048576.0, ++end;
  else if (*end == 'G' || *end == 'g') m = 1073741824.0, ++end;
  if (*end != '\0') return false;
  *out = static_cast<size_t>(v * m);
  return true;
}

// Whether the library runs this call as the program kernel: on the IPC path
// (not COLL_DEVICE_PATH=staged) always with COLL_DEVICE_PROGRAM=1, never
// with 0, and by default (auto) by sched::programByDefault: when the
// stream-operation path would queue more than its budget, and all-reduces
// of 2-4 ranks up to 8 MiB (schedule/device_stream_ops.h; one launch up to
// 32 KiB).
bool takesProgram(Coll c, size_t count, int n, size_t stageBytes) {
  const char* path = std::getenv("COLL_DEVICE_PATH");
  if (path != nullptr && std::strcmp(path, "staged") == 0) return false;
  if (c == Coll::SendRecv) return false;  // its own kernel (transports/p2p/peer_sendrecv.h)
  const char* mode = std::getenv("COLL_DEVICE_PROGRAM");
  if ((mode != nullptr && std::strcmp(mode, "0") == 0) || n < 2) return false;
  if (c == Coll::AllReduce && count * 4 <= 32 * 1024) return false;  // one launch
  if (mode != nullptr && std::strcmp(mode, "1") == 0) return true;
  coll::sched::DeviceGroupCall call;
  call.kind = c == Coll::AllReduce   ? coll::sched::CollKind::AllReduce
              : c == Coll::AllGather ? coll::sched::CollKind::AllGather
              : c == Coll::Broadcast ? coll::sched::CollKind::Broadcast
                                     : coll::sched::CollKind::ReduceScatter;
  call.count = count;
  call.elemSize = 4;
  return coll::sched::programByDefault(call, {n, stageBytes, 32 * 1024});
}

// Bytes one rank reads + writes in GPU memory per call of S bytes (the
// collective's size as nccl-tests counts it), as the device path does it
// (all-reduce: one launch up to 32 KiB, one-shot up to 256 KiB): the stream-
// operation path of device_collectives.cc, or the program kernel's
// (schedule/device_program.cc: N-input reductions).
double bytesPerRank(Coll c, double S, int n, size_t stageBytes, bool program, bool local) {
  const double N = n;
  if (local && n > 1) {
    // The local path on one GPU (schedule/local_plan.h), all ranks' bytes
    // over N.  A reduction kernel reads up to kFan inputs and writes up to
    // kFan outputs; more ranks chain through one output (read and written
    // again per later kernel), and outputs past the fan are copies of it.
    constexpr double kFan = 8;  // sched::kLocalFan
    const double kernels = N <= kFan ? 1 : 1 + std::ceil((N - kFan) / (kFan - 1));
    const double extraOuts = N > kFan ? N - kFan : 0;
    const double chain = 2 * (kernels - 1);  // the accumulator's re-reads and re-writes, in units of the output
    switch (c) {
      case Coll::AllReduce:
        return (N * S + std::min(N, kFan) * S + chain * S + (std::ceil(extraOuts / kFan) + extraOuts) * S) / N;
      case Coll::ReduceScatter: return (N * S + S + chain * S) / N;  // S: the whole send buffer
      // Each block read once per kernel of up to kFan outputs, written to every output.
      case Coll::AllGather:
      case Coll::Broadcast: return (std::ceil(N / kFan) * S + N * S) / N;
      case Coll::SendRecv: return 2 * S;
    }
  }
  switch (c) {
    case Coll::AllReduce:
      if (n == 1) return 2 * S;
      if (S <= 32 * 1024) return 2 * S + N * S + S;  // one launch: stage, read all slots, write
      if (S <= 256 * 1024 && S <= double(stageBytes)) return program ? 2 * S + N * S + S : 2 * S + 3 * (N - 1) * S;
      return program ? 5 * S + S / N : 4 * S + 3 * (N - 1) * S / N;
    case Coll::AllGather: return 2 * S / N + 2 * S;              // own block in, every block out
    case Coll::Broadcast: return gRank == 0 ? 4 * S : 2 * S;      // root 0, out of place
    case Coll::ReduceScatter:                                       // S = the whole send buffer
      return program ? 3 * S + S / N : 2 * S + 3 * (N - 1) * S / N;
    case Coll::SendRecv:  // into this rank's mailbox (read + write), out of the previous rank's (read + write)
      return 4 * S;
  }
  return 0;
}

// This GPU's device-to-device copy, counted as read + write, in GB/s: the
// memory-traffic bound's denominator (a fixed default would be one GPU's:
// an H200 copies faster than the H100 the old default of 3000 was).
// 256 MiB, several times any L2; the best of 10 copies after 2 warm-ups.
double measureCopyGBps(cudaStream_t st, cudaEvent_t e0, cudaEvent_t e1) {
  const size_t bytes = 256u << 20;
  void *a = nullptr, *b = nullptr;
  CUDA_OK(cudaMalloc(&a, bytes));
  CUDA_OK(cudaMalloc(&b, bytes));
  CUDA_OK(cudaMemsetAsync(a, 1, bytes, st));
  float best = 0;
  for (int i = 0; i < 12; ++i) {
    CUDA_OK(cudaEventRecord(e0, st));
    CUDA_OK(cudaMemcpyAsync(b, a, bytes, cudaMemcpyDeviceToDevice, st));
    CUDA_OK(cudaEventRecord(e1, st));
    CUDA_OK(cudaEventSynchronize(e1));
    float ms = 0;
    CUDA_OK(cudaEventElapsedTime(&ms, e0, e1));
    if (i >= 2 && (best == 0 || ms < best)) best = ms;
  }
  CUDA_OK(cudaFree(a));
  CUDA_OK(cudaFree(b));
  return 2.0 * double(bytes) / (double(best) * 1e6);
}

struct Options {
  Coll coll = Coll::AllReduce;
  size_t minBytes = 8, maxBytes = 256u << 20, factor = 4;
  int iters = 20, warmup = 5;
  double hbm = 0;   // --hbm, else measured (measureCopyGBps)
  int threads = 0;  // -t: ranks as threads of this process
};

int runRank(const Options& o, collComm_t comm, int ndev);

}  // namespace

int main(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto next = [&]() -> const char* {
      if (i + 1 >= argc) { std::fprintf(stderr, "%s needs a value\n", a.c_str()); std::exit(2); }
      return argv[++i];
    };
    if (a == "-o") {
      const std::string v = next();
      if (v == "allreduce") o.coll = Coll::AllReduce;
      else if (v == "allgather") o.coll = Coll::AllGather;
      else if (v == "broadcast") o.coll = Coll::Broadcast;
      else if (v == "reducescatter") o.coll = Coll::ReduceScatter;
      else if (v == "sendrecv") o.coll = Coll::SendRecv;
      else { std::fprintf(stderr, "unknown collective %s\n", v.c_str()); return 2; }
    } else if (a == "-b") { if (!parseBytes(next(), &o.minBytes)) return 2; }
    else if (a == "-e") { if (!parseBytes(next(), &o.maxBytes)) return 2; }
    else if (a == "-f") { o.factor = std::strtoul(next(), nullptr, 10); if (o.factor < 2) return 2; }
    else if (a == "-n") { o.iters = std::atoi(next()); if (o.iters < 1) return 2; }
    else if (a == "-w") { o.warmup = std::atoi(next()); if (o.warmup < 0) return 2; }
    else if (a == "--hbm") { o.hbm = std::atof(next()); if (o.hbm <= 0) return 2; }
    else if (a == "-t") { o.threads = std::atoi(next()); if (o.threads < 1) return 2; }
    else {
      std::fprintf(stderr, "usage: %s [-o allreduce|allgather|broadcast|reducescatter|sendrecv] [-b B] [-e B] [-f F] [-n I] [-w W] [--hbm GBPS] [-t RANKS]\n", argv[0]);
      return 2;
    }
  }
  int ndev = 0;
  if (cudaGetDeviceCount(&ndev) != cudaSuccess || ndev == 0) {
    std::printf("SKIP: no CUDA device\n");
    return 77;
  }
  if (o.threads == 0) {
    collComm_t comm = nullptr;
    COLL_OK(collCommInitFromEnv(&comm));
    return runRank(o, comm, ndev);
  }
  std::vector<collComm_t> comms(o.threads);
  COLL_OK(collCommInitAll(comms.data(), o.threads, nullptr));
  std::vector<int> rc(o.threads);
  std::vector<std::thread> threads;
  for (int r = 0; r < o.threads; ++r) threads.emplace_back([&, r] { rc[r] = runRank(o, comms[r], ndev); });
  for (std::thread& t : threads) t.join();
  return *std::max_element(rc.begin(), rc.end());
}

namespace {

int runRank(const Options& o, collComm_t comm, int ndev) {
  const Coll coll = o.coll;
  const size_t minBytes = o.minBytes, maxBytes = o.maxBytes, factor = o.factor;
  const int iters = o.iters, warmup = o.warmup;
  double hbm = o.hbm;
  gComm = comm;
  COLL_OK(collCommUserRank(gComm, &gRank));
  COLL_OK(collCommCount(gComm, &gN));
  if (coll == Coll::SendRecv && gN < 2) {
    std::fprintf(stderr, "device_perf -o sendrecv needs at least 2 ranks\n");
    return 2;
  }
  CUDA_OK(cudaSetDevice(gRank % ndev));
  size_t stageBytes = 32u << 20;
  if (const char* s = std::getenv("COLL_DEVICE_STAGE_BYTES")) parseBytes(s, &stageBytes);
  cudaStream_t st;
  CUDA_OK(cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking));
  cudaEvent_t e0, e1;
  CUDA_OK(cudaEventCreate(&e0));
  CUDA_OK(cudaEventCreate(&e1));

  // Rank 0 measures the copy alone while the others wait in the broadcast.
  const bool hbmMeasured = hbm == 0;
  if (hbmMeasured) {
    if (gRank == 0) hbm = measureCopyGBps(st, e0, e1);
    COLL_OK(collBroadcast(&hbm, &hbm, 1, collFloat64, 0, gComm, nullptr));
  }

  const char* names[] = {"allreduce", "allgather", "broadcast", "reducescatter", "sendrecv"};
  const size_t N = size_t(gN);
  // Largest buffers: all-gather's recv and reduce-scatter's send are N x.
  const size_t maxElems = maxBytes / 4 + 1;
  float *send = nullptr, *recv = nullptr;
  CUDA_OK(cudaMalloc(&send, maxElems * sizeof(float)));
  CUDA_OK(cudaMalloc(&recv, maxElems * sizeof(float)));
  std::vector<float> host(maxElems);
  if (gRank == 0) {
    cudaDeviceProp prop;
    CUDA_OK(cudaGetDeviceProperties(&prop, gRank % ndev));
    std::printf("# device_perf %s: %d ranks%s on %d GPU(s) (%s), float32%s, %d iters after %d warm-up, time = max over ranks\n",
                names[int(coll)], gN, o.threads > 0 ? " (threads of one process: the local path)" : "",
                std::min(ndev, gN), prop.name, coll == Coll::AllReduce ? " sum" : "", iters, warmup);
    std::printf("# hbm GB/s: bytes all ranks move through GPU memory per call / time; %%bound: vs %.0f GB/s (%s)\n",
                hbm, hbmMeasured ? "this GPU's device-to-device copy, read + write, measured" : "--hbm");
    std::printf("# call(us): time for the call to return on the host (it only enqueues)\n");
    std::printf("# %10s  %12s  %9s  %8s  %8s  %6s  %9s  %6s  %8s\n", "size(B)", "count", "time(us)", "algbw", "busbw",
                "#wrong", "hbm GB/s", "%bound", "call(us)");
  }
  long wrongTotal = 0;  // over every size and rank: any makes the exit status 1
  std::vector<size_t> sizes;
  for (size_t b = minBytes; b <= maxBytes; b *= factor) sizes.push_back(b);
  if (sizes.empty() || sizes.back() != maxBytes) sizes.push_back(maxBytes);  // the last size is always -e
  for (size_t bytes : sizes) {
    // count: the C API's; S: nccl-tests' size (the larger buffer).
    size_t count = std::max<size_t>(bytes / 4, 1);
    if (coll == Coll::AllGather || coll == Coll::ReduceScatter) count = std::max<size_t>(count / N, 1);
    const size_t sendElems = coll == Coll::ReduceScatter ? count * N : count;
    const size_t recvElems = coll == Coll::AllGather ? count * N : count;
    const double S = double(std::max(sendElems, recvElems)) * 4;
    for (size_t i = 0; i < sendElems; ++i) host[i] = float((gRank + 1) * ((i % 13) + 1));
    // On the timed stream: a pageable cudaMemcpy on the legacy stream may
    // still be landing when st's work starts.
    CUDA_OK(cudaMemcpyAsync(send, host.data(), sendElems * 4, cudaMemcpyHostToDevice, st));
    CUDA_OK(cudaStreamSynchronize(st));
    auto call = [&] {
      switch (coll) {
        case Coll::AllReduce: COLL_OK(collAllReduce(send, recv, count, collFloat32, collSum, gComm, st)); break;
        case Coll::AllGather: COLL_OK(collAllGather(send, recv, count, collFloat32, gComm, st)); break;
        case Coll::Broadcast: COLL_OK(collBroadcast(send, recv, count, collFloat32, 0, gComm, st)); break;
        case Coll::ReduceScatter: COLL_OK(collReduceScatter(send, recv, count, collFloat32, collSum, gComm, st)); break;
        case Coll::SendRecv:
          COLL_OK(collGroupStart());
          COLL_OK(collSend(send, count, collFloat32, (gRank + 1) % gN, gComm, st));
          COLL_OK(collRecv(recv, count, collFloat32, (gRank + gN - 1) % gN, gComm, st));
          COLL_OK(collGroupEnd());
          break;
      }
    };
    // Checked call.
    CUDA_OK(cudaMemsetAsync(recv, 0, recvElems * 4, st));
    call();
    CUDA_OK(cudaMemcpyAsync(host.data(), recv, recvElems * 4, cudaMemcpyDeviceToHost, st));
    CUDA_OK(cudaStreamSynchronize(st));
    long wrong = 0;
    const double tri = double(N * (N + 1) / 2);
    for (size_t i = 0; i < recvElems; ++i) {
      double want = 0;
      switch (coll) {
        case Coll::AllReduce: want = tri * double((i % 13) + 1); break;
        case Coll::AllGather: want = double(i / count + 1) * double(((i % count) % 13) + 1); break;
        case Coll::Broadcast: want = double((i % 13) + 1); break;
        case Coll::ReduceScatter: want = tri * double(((size_t(gRank) * count + i) % 13) + 1); break;
        case Coll::SendRecv: want = double((gRank + gN - 1) % gN + 1) * double((i % 13) + 1); break;
      }
      if (double(host[i]) != want) ++wrong;
    }
    for (int w = 0; w < warmup; ++w) call();
    CUDA_OK(cudaEventRecord(e0, st));
    const auto h0 = std::chrono::steady_clock::now();
    for (int it = 0; it < iters; ++it) call();
    const double hostUs = std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - h0).count() / iters;
    CUDA_OK(cudaEventRecord(e1, st));
    CUDA_OK(cudaEventSynchronize(e1));
    float ms = 0;
    CUDA_OK(cudaEventElapsedTime(&ms, e0, e1));
    // Max time and total bytes over ranks (host all-reduces on this comm).
    const bool program = o.threads == 0 && takesProgram(coll, count, gN, stageBytes);
    double t[2] = {double(ms) * 1000.0 / iters, bytesPerRank(coll, S, gN, stageBytes, program, o.threads > 1)};
    double tMax = 0, bytesAll = 0, hostMax = 0;
    long wrongAll = 0;
    COLL_OK(collAllReduce(&t[0], &tMax, 1, collFloat64, collMax, gComm, nullptr));
    COLL_OK(collAllReduce(&hostUs, &hostMax, 1, collFloat64, collMax, gComm, nullptr));
    COLL_OK(collAllReduce(&t[1], &bytesAll, 1, collFloat64, collSum, gComm, nullptr));
    COLL_OK(collAllReduce(&wrong, &wrongAll, 1, collInt64, collSum, gComm, nullptr));
    const double algbw = S / (tMax * 1e-6) / 1e9;
    double busFactor = 1;
    if (coll == Coll::AllReduce) busFactor = 2.0 * double(N - 1) / double(N);
    else if (coll == Coll::AllGather || coll == Coll::ReduceScatter) busFactor = double(N - 1) / double(N);
    const double hbmRate = bytesAll / (tMax * 1e-6) / 1e9;
    if (gRank == 0)
      std::printf("  %10.0f  %12zu  %9.2f  %8.2f  %8.2f  %6ld  %9.1f  %5.1f%%  %8.2f%s\n", S, count, tMax, algbw,
                  algbw * busFactor, wrongAll, hbmRate, 100.0 * hbmRate / hbm, hostMax, program ? "  (program)" : "");
    wrongTotal += wrongAll;
  }
  CUDA_OK(cudaStreamSynchronize(st));
  CUDA_OK(cudaFree(send));
  CUDA_OK(cudaFree(recv));
  CUDA_OK(cudaEventDestroy(e0));
  CUDA_OK(cudaEventDestroy(e1));
  CUDA_OK(cudaStreamDestroy(st));
  COLL_OK(collCommDestroy(gComm));
  if (wrongTotal != 0) {
    if (gRank == 0) std::fprintf(stderr, "device_perf: %ld wrong elements\n", wrongTotal);
    return 1;
  }
  return 0;
}

}  // namespace
