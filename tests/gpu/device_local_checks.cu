// device_local_checks.cu — the checks of coll_device_local_test beside the
// collective grid (the World and drive() they use: device_local_world.cu):
// send/recv (a ring shift and a self pair in one group), asynchrony (calls return while
// blocker kernels hold every rank's stream), a CUDA graph captured from one
// origin stream, prompt destroy, mismatched counts and a rank that never
// calls (the timeout).  See device_local_test.cu.
#include <algorithm>
#include <array>
#include <cstdarg>
#include <cstring>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "blocker.cuh"
#include "device_local_checks.h"

namespace localtest {

// ------------------------------------------------------------ send/recv

// Byte i of the message from rank `from` to rank `to`.
static unsigned char p2pByte(int from, int to, size_t i, int round) {
  return static_cast<unsigned char>((size_t(from) * 131 + size_t(to) * 17 + size_t(round) * 7 + i * 2654435761u) >> 3);
}

// Each rank sends `bytes` to rank + 1 and to itself, and receives from
// rank - 1 and from itself, all four in one group (one thread: one group of
// every rank's four; threads: a group per rank).
void sendRecvRound(World& w, Mode m, size_t bytes, int round) {
  const int n = w.n;
  // Per rank: ring send, self send, ring receive, self receive (+1: never empty).
  std::vector<std::array<unsigned char*, 4>> buf(w.comms.size());
  std::vector<unsigned char> h(bytes + 1);
  for (int r = 0; r < n; ++r) {
    LOCAL_CUDA_OK(cudaSetDevice(w.dev[r]));
    const int to[2] = {(r + 1) % n, r};
    for (int k = 0; k < 4; ++k) LOCAL_CUDA_OK(cudaMalloc(&buf[r][k], bytes + 1));
    for (int k = 0; k < 2; ++k) {
      for (size_t i = 0; i < bytes; ++i) h[i] = p2pByte(r, to[k], i, round);
      LOCAL_CUDA_OK(cudaMemcpy(buf[r][k], h.data(), bytes, cudaMemcpyHostToDevice));
    }
    for (int k = 2; k < 4; ++k) LOCAL_CUDA_OK(cudaMemset(buf[r][k], 0, bytes + 1));
  }
  settleAll();
  const auto res = drive(w, m, [&](int r) {
    const bool own = m == Mode::Threads;  // a thread's ring send/recv needs a group of its own
    collComm_t c = w.comms[r];
    cudaStream_t s = w.streams[r];
    collResult_t e = own ? collGroupStart() : collSuccess;
    if (e == collSuccess) e = collSend(buf[r][0], bytes, collUint8, (r + 1) % n, c, s);
    if (e == collSuccess) e = collSend(buf[r][1], bytes, collUint8, r, c, s);
    if (e == collSuccess) e = collRecv(buf[r][2], bytes, collUint8, (r - 1 + n) % n, c, s);
    if (e == collSuccess) e = collRecv(buf[r][3], bytes, collUint8, r, c, s);
    if (own) {
      const collResult_t end = collGroupEnd();
      if (e == collSuccess) e = end;
    }
    return e;
  });
  const std::string what = std::string("send/recv (") + modeName(m) + ", " + std::to_string(bytes) + " B)";
  const bool called = allSucceeded(w, res, what);
  w.syncStreams();
  const bool checked = called && noAsyncError(w, what);  // else the failure says it
  for (int r = 0; r < n; ++r) {
    LOCAL_CUDA_OK(cudaSetDevice(w.dev[r]));
    const int from[2] = {(r - 1 + n) % n, r};
    for (int k = 0; k < 2 && checked; ++k) {
      LOCAL_CUDA_OK(cudaMemcpy(h.data(), buf[r][2 + k], bytes + 1, cudaMemcpyDeviceToHost));
      size_t bad = 0;
      while (bad < bytes && h[bad] == p2pByte(from[k], r, bad, round)) ++bad;
      if (bad < bytes)
        fail("%s: rank %d: byte %zu from rank %d is %u, want %u", what.c_str(), r, bad, from[k], h[bad],
             p2pByte(from[k], r, bad, round));
      else if (h[bytes] != 0)
        fail("%s: rank %d: the byte past the message from rank %d was written (%u)", what.c_str(), r, from[k],
             h[bytes]);
    }
    for (unsigned char* b : buf[r]) LOCAL_CUDA_OK(cudaFree(b));
  }
}

void testSendRecv(World& w, Mode m) {
  const long before = gFailed;
  int round = 0;
  for (size_t bytes : {size_t(0), size_t(1), size_t(1000003)}) sendRecvRound(w, m, bytes, ++round);
  std::printf("%-10s send/recv: ring shift and self pair in one group, 0 B, 1 B, 1000003 B: %s\n", modeName(m),
              gFailed == before ? "ok" : "FAILED");
}

// ------------------------------------------------------------ asynchrony

// `calls` in-place all-reduces of `count` floats per rank (on their own
// buffers), made while a blocker kernel holds every rank's stream: the calls
// must return (not wait for the GPU: then the blocker would run to its
// limit), every stream is still pending, the output is untouched before the
// release, and right after it the result is there.
static void asyncCase(World& w, Mode m, size_t count, size_t calls) {
  const size_t total = count * calls;
  std::vector<float*> d = rankFloats(w, total, [](int r, size_t) { return float(r + 1); });
  settleAll();
  devtest::Blocker blocker;
  const unsigned long long limitNs = 20ull * 1000 * 1000 * 1000;
  for (int r = 0; r < w.n; ++r) {
    LOCAL_CUDA_OK(cudaSetDevice(w.dev[r]));
    blocker.hold(w.streams[r], limitNs);
  }
  LOCAL_CUDA_OK(cudaGetLastError());
  std::vector<uint64_t> opsBefore(w.comms.size());
  for (int r = 0; r < w.n; ++r) opsBefore[r] = devtest::streamOpsQueued(w.streams[r]);
  const auto t0 = std::chrono::steady_clock::now();
  const auto res = drive(w, m, [&](int r) {
    for (size_t k = 0; k < calls; ++k) {
      const collResult_t e =
          collAllReduce(d[r] + k * count, d[r] + k * count, count, collFloat32, collSum, w.comms[r], w.streams[r]);
      if (e != collSuccess) return e;
    }
    return collSuccess;
  });
  const double callS = secondsSince(t0);
  char what[160];
  std::snprintf(what, sizeof what, "async (%s, %zu x count %zu per rank)", modeName(m), calls, count);
  const bool called = allSucceeded(w, res, what);
  int pending = 0;
  uint64_t mostOps = 0;  // the most stream operations a rank's stream got (where the emulated runtime counts)
  for (int r = 0; r < w.n; ++r) {
    LOCAL_CUDA_OK(cudaSetDevice(w.dev[r]));
    pending += cudaStreamQuery(w.streams[r]) == cudaErrorNotReady;
    mostOps = std::max(mostOps, devtest::streamOpsQueued(w.streams[r]) - opsBefore[r]);
  }
  // Each rank's first output element as it is before the release, copied on
  // a stream of its own (not ordered after the rank's).  CUDA may put that
  // stream on the hardware queue of a held one (the emulated runtime does
  // with one work queue: not tried there), and then the copy waits for the
  // release: a copy not done within 2 s is not judged.
  std::vector<cudaStream_t> peekStreams;
  float* peek = nullptr;
  int touched = 0, unjudged = 0;
  if (devtest::canPeekPastHeldStream()) {
    peekStreams.resize(w.comms.size());
    LOCAL_CUDA_OK(
        cudaHostAlloc(reinterpret_cast<void**>(&peek), w.comms.size() * sizeof(float), cudaHostAllocPortable));
    for (int r = 0; r < w.n; ++r) {
      LOCAL_CUDA_OK(cudaSetDevice(w.dev[r]));
      LOCAL_CUDA_OK(cudaStreamCreateWithFlags(&peekStreams[r], cudaStreamNonBlocking));
      LOCAL_CUDA_OK(cudaMemcpyAsync(peek + r, d[r], sizeof(float), cudaMemcpyDeviceToHost, peekStreams[r]));
    }
    const auto p0 = std::chrono::steady_clock::now();
    for (int r = 0; r < w.n; ++r) {
      LOCAL_CUDA_OK(cudaSetDevice(w.dev[r]));
      cudaError_t e;
      while ((e = cudaStreamQuery(peekStreams[r])) == cudaErrorNotReady && secondsSince(p0) < 2.0)
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
      if (e == cudaErrorNotReady) {
        ++unjudged;
        continue;
      }
      LOCAL_CUDA_OK(e);
      touched += peek[r] != float(r + 1);
    }
  }
  blocker.release();
  w.syncStreams();
  for (size_t r = 0; r < peekStreams.size(); ++r) {
    LOCAL_CUDA_OK(cudaSetDevice(w.dev[r]));
    LOCAL_CUDA_OK(cudaStreamSynchronize(peekStreams[r]));
    LOCAL_CUDA_OK(cudaStreamDestroy(peekStreams[r]));
  }
  if (peek != nullptr) LOCAL_CUDA_OK(cudaFreeHost(peek));
  const bool heldToLimit = blocker.heldToLimit();
  if (called && (pending != w.n || touched != 0 || heldToLimit))
    fail("%s: the calls took %.3f s; streams pending after them: %d of %d; outputs written before the release: %d; "
         "a blocker ran to its limit (a call waited for the GPU, or for room on a full stream: at most %llu "
         "operations queued on one): %d", what, callS, pending, w.n, touched, static_cast<unsigned long long>(mostOps),
         int(heldToLimit));
  const float want = float(w.n * (w.n + 1) / 2);
  const bool right = called && noAsyncError(w, what) &&  // (a failed call: its failure says it)
                     expectRankFloats(w, what, d, total, [&](int, size_t) { return want; });
  if (right && pending == w.n && touched == 0 && !heldToLimit)
    std::printf("%-10s async: %zu x %zu floats per rank returned in %.3f s with every stream held; results after the "
                "release (outputs before it: %d of %d read; at most %llu operations queued on a stream)\n",
                modeName(m), calls, count, callS, int(peekStreams.size()) - unjudged, w.n,
                static_cast<unsigned long long>(mostOps));
  freeAll(w, d);
}

void testAsync(World& w, Mode m) {
  warmUp(w, m);
  asyncCase(w, m, 1 << 20, 1);
  // Many calls queued at once (a training step's gradient buckets): about
  // 3N operations each on rank 0's stream (the hub: a wait per rank, N - 1
  // reductions and copies), so at most ~600 of the ~1000 a stream holds
  // before an enqueue waits for the GPU.
  asyncCase(w, m, 1000, std::min<size_t>(40, 600 / (3 * static_cast<size_t>(w.n) + 3)));
}

// ------------------------------------------------------------ graphs

// Every rank's calls (an out-of-place all-reduce and an all-gather) captured
// into one graph from rank 0's stream: every other rank's stream joins the
// capture by waiting for an event recorded on it (fork), the calls are made,
// each other stream records an event rank 0's stream waits for (join), and
// the capture ends.  Launched twice on rank 0's stream with new inputs each
// time; every rank's results checked.
void testGraph(World& w, Mode m) {
  warmUp(w, m);  // the device setup is not captured
  const long before = gFailed;
  const int n = w.n;
  const size_t count = 100003, countG = 1031;
  auto v = [](int r, size_t i, int launch) { return float(i % 7 + size_t(r) + 3 * size_t(launch)); };
  auto g = [](int r, size_t i, int launch) { return float((i * 5 + size_t(r) * 3 + size_t(launch)) % 13); };
  std::vector<float*> in = rankFloats(w, count, [](int, size_t) { return 0.0f; });
  std::vector<float*> out = rankFloats(w, count, [](int, size_t) { return -1.0f; });
  std::vector<float*> gin = rankFloats(w, countG, [](int, size_t) { return 0.0f; });
  std::vector<float*> gout = rankFloats(w, size_t(n) * countG, [](int, size_t) { return -1.0f; });
  // An event is recorded on a stream of its own device: fork on device 0,
  // join r on rank r's.
  cudaEvent_t fork;
  std::vector<cudaEvent_t> join(w.comms.size());
  LOCAL_CUDA_OK(cudaSetDevice(w.dev[0]));
  LOCAL_CUDA_OK(cudaEventCreateWithFlags(&fork, cudaEventDisableTiming));
  for (int r = 0; r < n; ++r) {
    LOCAL_CUDA_OK(cudaSetDevice(w.dev[r]));
    LOCAL_CUDA_OK(cudaEventCreateWithFlags(&join[r], cudaEventDisableTiming));
  }
  settleAll();
  cudaStream_t s0 = w.streams[0];
  LOCAL_CUDA_OK(cudaSetDevice(w.dev[0]));
  LOCAL_CUDA_OK(cudaStreamBeginCapture(s0, cudaStreamCaptureModeThreadLocal));
  LOCAL_CUDA_OK(cudaEventRecord(fork, s0));
  for (int r = 1; r < n; ++r) LOCAL_CUDA_OK(cudaStreamWaitEvent(w.streams[r], fork, 0));
  const auto res = drive(w, m, [&](int r) {
    collResult_t e = collAllReduce(in[r], out[r], count, collFloat32, collSum, w.comms[r], w.streams[r]);
    if (e == collSuccess) e = collAllGather(gin[r], gout[r], countG, collFloat32, w.comms[r], w.streams[r]);
    return e;
  });
  for (int r = 1; r < n; ++r) {
    LOCAL_CUDA_OK(cudaSetDevice(w.dev[r]));
    LOCAL_CUDA_OK(cudaEventRecord(join[r], w.streams[r]));
    LOCAL_CUDA_OK(cudaSetDevice(w.dev[0]));
    LOCAL_CUDA_OK(cudaStreamWaitEvent(s0, join[r], 0));
  }
  cudaGraph_t graph;
  LOCAL_CUDA_OK(cudaSetDevice(w.dev[0]));
  LOCAL_CUDA_OK(cudaStreamEndCapture(s0, &graph));
  const std::string what = std::string("graph (") + modeName(m) + ")";
  const bool captured = allSucceeded(w, res, what + ": the captured calls");
  if (captured) {
    cudaGraphExec_t exec;
    LOCAL_CUDA_OK(cudaGraphInstantiate(&exec, graph, 0));
    for (int launch = 0; launch < 2; ++launch) {
      for (int r = 0; r < n; ++r) {
        std::vector<float> h(count);
        for (size_t i = 0; i < count; ++i) h[i] = v(r, i, launch);
        LOCAL_CUDA_OK(cudaSetDevice(w.dev[r]));
        LOCAL_CUDA_OK(cudaMemcpy(in[r], h.data(), count * sizeof(float), cudaMemcpyHostToDevice));
        for (size_t i = 0; i < countG; ++i) h[i] = g(r, i, launch);
        LOCAL_CUDA_OK(cudaMemcpy(gin[r], h.data(), countG * sizeof(float), cudaMemcpyHostToDevice));
      }
      settleAll();
      LOCAL_CUDA_OK(cudaSetDevice(w.dev[0]));
      LOCAL_CUDA_OK(cudaGraphLaunch(exec, s0));
      LOCAL_CUDA_OK(cudaStreamSynchronize(s0));  // the joins: every rank's nodes are done
      const std::string at = what + ", launch " + std::to_string(launch);
      expectRankFloats(w, at + ": all-reduce", out, count, [&](int, size_t i) {
        float sum = 0;
        for (int q = 0; q < n; ++q) sum += v(q, i, launch);
        return sum;
      });
      expectRankFloats(w, at + ": all-gather", gout, size_t(n) * countG,
                       [&](int, size_t i) { return g(int(i / countG), i % countG, launch); });
    }
    LOCAL_CUDA_OK(cudaGraphExecDestroy(exec));
  }
  if (captured) noAsyncError(w, what);
  LOCAL_CUDA_OK(cudaGraphDestroy(graph));
  LOCAL_CUDA_OK(cudaSetDevice(w.dev[0]));
  LOCAL_CUDA_OK(cudaEventDestroy(fork));
  for (int r = 0; r < n; ++r) {
    LOCAL_CUDA_OK(cudaSetDevice(w.dev[r]));
    LOCAL_CUDA_OK(cudaEventDestroy(join[r]));
  }
  for (const auto& d : {in, out, gin, gout}) freeAll(w, d);
  std::printf("%-10s graph: all-reduce + all-gather of every rank captured from rank 0's stream, 2 launches: %s\n",
              modeName(m), gFailed == before ? "ok" : "FAILED");
}

// ------------------------------------------------------------ destroy

// One thread destroys every communicator of w in a loop, right after its
// calls: each destroy must return without waiting for the others' (NCCL's
// ncclCommDestroy loop over ncclCommInitAll's communicators), long before
// the default COLL_TIMEOUT.
void checkDestroy(World& w, const char* what) {
  w.syncStreams();
  collResult_t first = collSuccess;
  const double s = w.destroyComms(&first);
  if (first != collSuccess || s > 5.0)
    fail("destroy %s: collCommDestroy of %d communicators from one thread gave %s and took %.2f s (limit 5 s)", what,
         w.n, collGetErrorString(first), s);
  else
    std::printf("destroy %s: %d communicators from one thread in %.3f s\n", what, w.n, s);
}

// ------------------------------------------------------------ mismatches

// Rank 1 calls an all-reduce with one element more than the others: every
// rank's call (threads) or the collGroupEnd (one thread) must fail with
// collArgMismatch, and every rank's last error must name ranks 0 and 1.  As
// the communicators' first device call, or after one.  Their timeout is
// short, so that a mismatch the library misses fails in seconds, not hangs.
static void mismatchCase(Mode m, bool first) {
  World w("20s");
  if (!first) warmUp(w, m);
  const size_t count = 1000;
  std::vector<float*> d = rankFloats(w, count + 1, [](int r, size_t) { return float(r); });
  settleAll();
  const auto res = drive(w, m, [&](int r) {
    return collAllReduce(d[r], d[r], count + (r == 1 ? 1 : 0), collFloat32, collSum, w.comms[r], w.streams[r]);
  });
  char what[128];
  std::snprintf(what, sizeof what, "mismatched counts (%s, %s)", modeName(m),
                first ? "the first device call" : "after a call");
  bool ok = true;
  for (int r = 0; r < w.n; ++r) {
    const std::string msg = collGetLastError(w.comms[r]);
    if (res[r] != collArgMismatch || msg.find("rank 0") == std::string::npos ||
        msg.find("rank 1") == std::string::npos) {
      ok = false;
      fail("%s: rank %d: %s, want collArgMismatch naming ranks 0 and 1: \"%s\" (this thread's last error: \"%s\")",
           what, r, collGetErrorString(res[r]), msg.c_str(), collGetLastError(nullptr));
    }
  }
  if (ok) std::printf("%s: every rank refused: %s\n", what, collGetLastError(w.comms[0]));
  w.syncStreams();
  // The communicators are finished: destroy them (and time it: prompt even
  // though they failed).
  const double s = w.destroyComms();
  if (s > 10.0) fail("%s: destroying the failed communicators took %.2f s", what, s);
  freeAll(w, d);
}

void testMismatch() {
  if (gRanks < 2) return;
  for (Mode m : gModes)
    for (bool first : {true, false}) mismatchCase(m, first);
}

// ------------------------------------------------------------ timeouts

// COLL_TIMEOUT=2s; a thread per rank, every rank but the last calls an
// all-reduce and the last never does: each caller must get collTimeout
// after about the timeout (not at once, not after the default), its last
// error naming the missing rank as stuck.
void testTimeout() {
  if (gRanks < 2) return;
  const long before = gFailed;
  World w("2s");
  warmUp(w, Mode::Threads);  // the device setup needs every rank: not what this times
  const int absent = w.n - 1;
  const size_t count = 1000;
  std::vector<float*> d = rankFloats(w, count, [](int r, size_t) { return float(r); });
  settleAll();
  std::vector<collResult_t> res(w.comms.size(), collSuccess);
  std::vector<double> secs(w.comms.size(), 0);
  std::vector<std::thread> threads;
  for (int r = 0; r < absent; ++r)
    threads.emplace_back([&, r] {
      LOCAL_CUDA_OK(cudaSetDevice(w.dev[r]));
      const auto t0 = std::chrono::steady_clock::now();
      res[r] = collAllReduce(d[r], d[r], count, collFloat32, collSum, w.comms[r], w.streams[r]);
      secs[r] = secondsSince(t0);
    });
  for (std::thread& t : threads) t.join();
  const std::string stuck = "stuck: rank(s) " + std::to_string(absent);
  const std::string sample = collGetLastError(w.comms[0]);
  for (int r = 0; r < absent; ++r) {
    const std::string msg = collGetLastError(w.comms[r]);
    if (res[r] != collTimeout || secs[r] < 1.5 || secs[r] > 10.0 || msg.find(stuck) == std::string::npos)
      fail("timeout (rank %d never calls, COLL_TIMEOUT=2s): rank %d's call gave %s after %.2f s (want collTimeout "
           "after 2-10 s, \"%s\"): \"%s\"", absent, r, collGetErrorString(res[r]), secs[r], stuck.c_str(), msg.c_str());
  }
  w.syncStreams();
  const double s = w.destroyComms();
  if (s > 10.0) fail("timeout: destroying the failed communicators took %.2f s", s);
  freeAll(w, d);
  if (gFailed == before)
    std::printf("timeout: rank %d never called; the others got collTimeout after %.2f s: %s\n", absent, secs[0],
                sample.c_str());
}

}  // namespace localtest
