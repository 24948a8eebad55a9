// device_coll_checks.cu — the checks of coll_device_coll_test beside the
// collective cases: asynchrony and stream order, two communicators on
// crossed streams, CUDA graph capture, send/recv, the refusal of a
// host/device mix and a reduce whose non-roots pass no recvbuff (see
// device_coll_test.cu; groups: device_group_checks.cu; mismatches and
// timeouts: device_failure_checks.cu).
#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "blocker.cuh"
#include "device_test_common.h"
#include "schedule/device_stream_ops.h"

namespace devtest {

// ------------------------------------------------------------ asynchrony

// COLL_DEVICE_PROGRAM=0: no call leaves the stream operations, however many.
static bool programOff() {
  const char* mode = std::getenv("COLL_DEVICE_PROGRAM");
  return mode != nullptr && std::strcmp(mode, "0") == 0;
}

void checkStreamOps(const char* what, uint64_t before, cudaStream_t s) {
  if (programOff()) return;
  const uint64_t queued = streamOpsQueued(s) - before;
  if (queued > coll::sched::kDeviceStreamOpBudget) {
    ++gFailures;
    std::fprintf(stderr, "rank %d: FAIL %s queued %llu stream operations (budget %llu)\n", gRank, what,
                 static_cast<unsigned long long>(queued),
                 static_cast<unsigned long long>(coll::sched::kDeviceStreamOpBudget));
  }
}

// `calls` all-reduces of `count` floats each (on their own buffers) behind
// a blocker kernel: the calls return while the blocker holds the stream,
// the stream is still pending, the output is unchanged before the release
// and right after the event.
static void asyncCase(cudaStream_t s, size_t count, size_t calls) {
  float *d = nullptr;
  const size_t total = count * calls;
  CUDA_OK(cudaMalloc(&d, total * sizeof(float)));
  Blocker blocker;
  std::vector<float> h(total, float(gRank + 1));
  CUDA_OK(cudaMemcpy(d, h.data(), total * sizeof(float), cudaMemcpyHostToDevice));
  settleSetup();
  // The call must return while the blocker holds the stream, whatever the
  // size: a call that queued more stream operations than the stream holds
  // (per piece, say) would wait for room behind the blocker until its limit.
  blocker.hold(s, 20ull * 1000 * 1000 * 1000);
  CUDA_OK(cudaGetLastError());
  const auto t0 = std::chrono::steady_clock::now();
  for (size_t k = 0; k < calls; ++k) {
    const uint64_t opsBefore = streamOpsQueued(s);
    COLL_OK(collAllReduce(d + k * count, d + k * count, count, collFloat32, collSum, gComm, s));
    checkStreamOps("async all-reduce", opsBefore, s);
  }
  const double callMs = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  cudaEvent_t ev;
  CUDA_OK(cudaEventCreate(&ev));
  CUDA_OK(cudaEventRecord(ev, s));
  const bool pending = cudaStreamQuery(s) == cudaErrorNotReady;
  const bool peek = canPeekPastHeldStream();
  float probe = float(gRank + 1);
  if (peek) CUDA_OK(cudaMemcpy(&probe, d, sizeof probe, cudaMemcpyDeviceToHost));  // legacy stream: not ordered after s
  blocker.release();
  CUDA_OK(cudaEventSynchronize(ev));
  CUDA_OK(cudaMemcpy(h.data(), d, total * sizeof(float), cudaMemcpyDeviceToHost));
  const float want = float(gN * (gN + 1) / 2);
  const bool heldToLimit = blocker.heldToLimit();
  bool ok = pending && !heldToLimit && probe == float(gRank + 1);
  size_t bad = 0;
  while (ok && bad < total && h[bad] == want) ++bad;
  ok = ok && bad == total;
  if (!ok) {
    ++gFailures;
    std::fprintf(stderr, "rank %d: FAIL async (%zu x count %zu): calls took %.3f ms, stream pending after them: %d, "
                 "blocker ran to its limit (a call waited for the stream): %d, output before release %g (want %d), "
                 "after [%zu] %g (want %g)\n", gRank, calls, count, callMs, int(pending), int(heldToLimit), probe,
                 gRank + 1, bad, bad < total ? h[bad] : want, want);
  } else if (gRank == 0) {
    std::printf("async (%zu x count %zu): the calls returned in %.3f ms with the stream blocked; the event completed "
                "with the result\n", calls, count, callMs);
  }
  CUDA_OK(cudaEventDestroy(ev));
  CUDA_OK(cudaFree(d));
}

void testAsync(cudaStream_t s) {
  asyncCase(s, 1 << 20, 1);
  // 40 calls queued at once (a training step's gradient buckets, say): on
  // the host-staged path two stream operations each, one a host function.
  asyncCase(s, 1000, 40);
  // Small staging regions (COLL_DEVICE_STAGE_BYTES, bytes, at most 1 MiB):
  // also a call of 320 regions, whose stream operations (at least 4 per
  // piece) would pass the ~1021 a stream holds; COLL_DEVICE_PROGRAM=0 lets
  // such a call block its caller (the documented price of turning it off).
  const char* stage = std::getenv("COLL_DEVICE_STAGE_BYTES");
  if (gStaged || stage == nullptr || programOff()) return;
  char* end = nullptr;
  const unsigned long long region = std::strtoull(stage, &end, 10);
  if (*end == '\0' && region > 0 && region <= (1u << 20)) asyncCase(s, size_t(320) * region / sizeof(float), 1);
}

// ------------------------------------ a pre-mul op destroyed while its call waits

// NCCL lets the caller destroy a pre-mul op as soon as the call that uses it
// returns.  Here the call waits behind a blocker while its op is destroyed
// and another op (another scalar, likely the same handle) is made: the call
// must still multiply by the first op's scalar.  (The host-staged path once
// looked the op up only when its proxy ran the call.)
void testPreMulLifetime(cudaStream_t s) {
  const size_t count = 1000;
  const long failuresBefore = gFailures;
  float* d = nullptr;
  float* scalars = nullptr;  // device: the first op's scalar, then the second's
  CUDA_OK(cudaMalloc(&d, count * sizeof(float)));
  CUDA_OK(cudaMalloc(&scalars, 2 * sizeof(float)));
  Blocker blocker;
  float first = 2.0f, second = 5.0f;
  const float both[2] = {first, second};
  CUDA_OK(cudaMemcpy(scalars, both, sizeof both, cudaMemcpyHostToDevice));
  for (collScalarResidence_t residence : {collScalarHostImmediate, collScalarDevice}) {
    const bool dev = residence == collScalarDevice;
    std::vector<float> h(count, float(gRank + 1));
    CUDA_OK(cudaMemcpy(d, h.data(), count * sizeof(float), cudaMemcpyHostToDevice));
    blocker.reset();
    settleSetup();
    blocker.hold(s, 20ull * 1000 * 1000 * 1000);
    collRedOp_t a, b;
    COLL_OK(collRedOpCreatePreMulSum(&a, dev ? static_cast<void*>(scalars) : static_cast<void*>(&first), collFloat32, residence, gComm));
    COLL_OK(collAllReduce(d, d, count, collFloat32, a, gComm, s));
    COLL_OK(collRedOpDestroy(a, gComm));
    COLL_OK(collRedOpCreatePreMulSum(&b, dev ? static_cast<void*>(scalars + 1) : static_cast<void*>(&second), collFloat32, residence,
                                     gComm));
    blocker.release();
    CUDA_OK(cudaStreamSynchronize(s));
    COLL_OK(collRedOpDestroy(b, gComm));
    CUDA_OK(cudaMemcpy(h.data(), d, count * sizeof(float), cudaMemcpyDeviceToHost));
    const float want = first * float(gN * (gN + 1) / 2);
    size_t bad = 0;
    while (bad < count && h[bad] == want) ++bad;
    if (bad < count) {
      ++gFailures;
      std::fprintf(stderr, "rank %d: FAIL pre-mul op (%s scalar) destroyed while its call waited: [%zu] = %g, want %g "
                   "(the second op's scalar would give %g)\n", gRank, dev ? "device" : "host", bad, h[bad], want,
                   second * float(gN * (gN + 1) / 2));
    }
  }
  if (gRank == 0) std::printf("pre-mul op destroyed while its call waited: %s\n", gFailures > failuresBefore ? "FAILED" : "ok");
  CUDA_OK(cudaFree(d));
  CUDA_OK(cudaFree(scalars));
}

// ------------------------------------ two communicators, crossed streams

// Two communicators whose calls reach their streams in opposite orders on
// ranks 0 and 1 (each holds back one stream with a blocker kernel for a
// while): both calls must complete, as NCCL's do.  The host-staged path
// once ran a call's whole host collective inside a host function, and CUDA
// may serialize the host functions of independent streams (the emulated
// runtime does): rank 0's would then wait in A for rank 1, and rank 1's in B
// for rank 0, until the timeout.
void testCrossedStreams() {
  if (gN < 2) return;
  const int timeoutMs = 20000;
  collComm_t a = freshComm(timeoutMs), b = freshComm(timeoutMs);
  cudaStream_t sa, sb;
  CUDA_OK(cudaStreamCreateWithFlags(&sa, cudaStreamNonBlocking));
  CUDA_OK(cudaStreamCreateWithFlags(&sb, cudaStreamNonBlocking));
  // Each communicator's device setup (collective, on the host, at its first
  // device call) first, on every rank: not what this case is about.
  setUpDevice(a, sa);
  setUpDevice(b, sb);
  const size_t count = 70001;  // several pieces where an entry makes the staged pieces small
  float *da = nullptr, *db = nullptr;
  CUDA_OK(cudaMalloc(&da, count * sizeof(float)));
  CUDA_OK(cudaMalloc(&db, count * sizeof(float)));
  std::vector<float> h(count, float(gRank + 1));
  CUDA_OK(cudaMemcpy(da, h.data(), count * sizeof(float), cudaMemcpyHostToDevice));
  for (float& x : h) x *= 10;
  CUDA_OK(cudaMemcpy(db, h.data(), count * sizeof(float), cudaMemcpyHostToDevice));
  settleSetup();
  Blocker blocker;
  // Rank 0 holds back B's stream and rank 1 A's: rank 0 reaches A first,
  // rank 1 reaches B first.
  const unsigned long long limitNs = 2ull * timeoutMs * 1000 * 1000;
  if (gRank == 0) blocker.hold(sb, limitNs);
  if (gRank == 1) blocker.hold(sa, limitNs);
  COLL_OK(collAllReduce(da, da, count, collFloat32, collSum, a, sa));
  COLL_OK(collAllReduce(db, db, count, collFloat32, collSum, b, sb));
  std::this_thread::sleep_for(std::chrono::milliseconds(300));  // the unblocked calls are under way
  blocker.release();
  const auto t0 = std::chrono::steady_clock::now();
  CUDA_OK(cudaStreamSynchronize(sa));
  CUDA_OK(cudaStreamSynchronize(sb));
  const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  collResult_t ea = collSuccess, eb = collSuccess;
  COLL_OK(collCommGetAsyncError(a, &ea));
  COLL_OK(collCommGetAsyncError(b, &eb));
  const float want = float(gN * (gN + 1) / 2);
  std::vector<float> ga(count), gb(count);
  CUDA_OK(cudaMemcpy(ga.data(), da, count * sizeof(float), cudaMemcpyDeviceToHost));
  CUDA_OK(cudaMemcpy(gb.data(), db, count * sizeof(float), cudaMemcpyDeviceToHost));
  size_t bad = 0;
  for (size_t i = 0; i < count; ++i) bad += (ga[i] != want) + (gb[i] != 10 * want);
  if (ea != collSuccess || eb != collSuccess || bad != 0) {
    ++gFailures;
    std::fprintf(stderr, "rank %d: FAIL crossed streams: async errors %s / %s (%s / %s), %zu wrong elements, "
                 "%.0f ms after the release\n", gRank, collGetErrorString(ea), collGetErrorString(eb),
                 collGetLastError(a), collGetLastError(b), bad, ms);
  } else if (gRank == 0) {
    std::printf("crossed streams: two communicators reached in opposite orders by ranks 0 and 1 both completed "
                "(%.0f ms after the release)\n", ms);
  }
  CUDA_OK(cudaFree(da));
  CUDA_OK(cudaFree(db));
  CUDA_OK(cudaStreamDestroy(sa));
  CUDA_OK(cudaStreamDestroy(sb));
  COLL_OK(collCommDestroy(a));
  COLL_OK(collCommDestroy(b));
}

// ------------------------------------ one communicator, two streams

// One communicator's calls A (stream 1) then B (stream 2), of different
// sizes, on every rank; rank 0 holds back stream 1 for a while.  Its B must
// still wait for its A (NCCL keeps a communicator's work in call order
// whatever the streams): run first, B would pair with the other ranks' A,
// a mismatch or a wrong sum.  A fresh communicator with a short timeout, so
// that a failure costs seconds and leaves gComm alone.
void testOneCommTwoStreams() {
  if (gN < 2) return;
  const int timeoutMs = 10000;
  const TwoStreamComm t(timeoutMs);
  collComm_t c = t.comm;
  cudaStream_t s1 = t.s1, s2 = t.s2;
  const size_t countA = 1000, countB = 3001;
  float *da = nullptr, *db = nullptr;
  CUDA_OK(cudaMalloc(&da, countA * sizeof(float)));
  CUDA_OK(cudaMalloc(&db, countB * sizeof(float)));
  std::vector<float> ha(countA, float(gRank + 1)), hb(countB, float(10 * (gRank + 1)));
  CUDA_OK(cudaMemcpy(da, ha.data(), countA * sizeof(float), cudaMemcpyHostToDevice));
  CUDA_OK(cudaMemcpy(db, hb.data(), countB * sizeof(float), cudaMemcpyHostToDevice));
  settleSetup();
  Blocker blocker;
  if (gRank == 0) blocker.hold(s1, 2ull * timeoutMs * 1000 * 1000);
  COLL_OK(collAllReduce(da, da, countA, collFloat32, collSum, c, s1));
  COLL_OK(collAllReduce(db, db, countB, collFloat32, collSum, c, s2));
  std::this_thread::sleep_for(std::chrono::milliseconds(300));  // an unordered B would be under way
  blocker.release();
  CUDA_OK(cudaStreamSynchronize(s1));
  CUDA_OK(cudaStreamSynchronize(s2));
  collResult_t e = collSuccess;
  COLL_OK(collCommGetAsyncError(c, &e));
  CUDA_OK(cudaMemcpy(ha.data(), da, countA * sizeof(float), cudaMemcpyDeviceToHost));
  CUDA_OK(cudaMemcpy(hb.data(), db, countB * sizeof(float), cudaMemcpyDeviceToHost));
  const float want = float(gN * (gN + 1) / 2);
  size_t bad = 0;
  for (float x : ha) bad += x != want;
  for (float x : hb) bad += x != 10 * want;
  if (e != collSuccess || bad != 0) {
    ++gFailures;
    std::fprintf(stderr, "rank %d: FAIL one communicator on two streams: async error %s (%s), %zu wrong elements\n",
                 gRank, collGetErrorString(e), collGetLastError(c), bad);
  } else if (gRank == 0) {
    std::printf("one communicator on two streams: the second call waited for the first\n");
  }
  CUDA_OK(cudaFree(da));
  CUDA_OK(cudaFree(db));
}

// ------------------------------------------- the staged path's pinned pool

// On the host-staged path, a communicator made with COLL_STAGED_POOL_BYTES
// at 4 MiB gets 40 calls of 256 KiB enqueued at once (no wait between
// them; each takes 3 pinned slots, 3 MiB at the default piece size): its
// pool must stay within the limit where the emulated runtime counts pinned
// bytes (without the limit it held every queued call's slots), and every
// result must be right.
void testStagedPoolBound() {
  if (!gStaged || gN < 2) return;
  const size_t limit = 4u << 20, calls = 40, count = 1u << 16;
  // Read at the communicator's first staged call only: set around it, with
  // nothing else in flight.
  setenv("COLL_STAGED_POOL_BYTES", std::to_string(limit).c_str(), 1);
  collComm_t c = freshComm(60000);
  cudaStream_t s;
  CUDA_OK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  setUpDevice(c, s);
  unsetenv("COLL_STAGED_POOL_BYTES");
  const uint64_t pinned0 = pinnedBytesNow();
  float* d = nullptr;
  CUDA_OK(cudaMalloc(&d, calls * count * sizeof(float)));
  std::vector<float> h(calls * count);
  for (size_t i = 0; i < h.size(); ++i) h[i] = float((i + size_t(gRank)) % 5);
  CUDA_OK(cudaMemcpy(d, h.data(), h.size() * sizeof(float), cudaMemcpyHostToDevice));
  settleSetup();
  uint64_t most = 0;
  for (size_t k = 0; k < calls; ++k) {
    COLL_OK(collAllReduce(d + k * count, d + k * count, count, collFloat32, collSum, c, s));
    const uint64_t now = pinnedBytesNow();
    most = std::max(most, now > pinned0 ? now - pinned0 : 0);
  }
  CUDA_OK(cudaStreamSynchronize(s));
  CUDA_OK(cudaMemcpy(h.data(), d, h.size() * sizeof(float), cudaMemcpyDeviceToHost));
  size_t bad = 0;
  for (size_t i = 0; i < h.size(); ++i) {
    float want = 0;
    for (int r = 0; r < gN; ++r) want += float((i + size_t(r)) % 5);
    bad += h[i] != want;
  }
  // pinned0 already holds the pool's first slots (setUpDevice's call).
  if (bad != 0 || most > limit) {
    ++gFailures;
    std::fprintf(stderr, "rank %d: FAIL staged pool: %zu wrong elements; the pool grew by %llu B over its first call's "
                 "(limit %zu B)\n", gRank, bad, static_cast<unsigned long long>(most), limit);
  } else if (gRank == 0) {
    std::printf("staged pool: %zu calls of %zu B queued at once, pinned pool grew by at most %llu B (limit %zu B)\n",
                calls, count * sizeof(float), static_cast<unsigned long long>(most), limit);
  }
  CUDA_OK(cudaFree(d));
  CUDA_OK(cudaStreamDestroy(s));
  COLL_OK(collCommDestroy(c));
}

// --------------------------------------------------------------- graphs

void testGraph(cudaStream_t s) {
  const size_t count = 100003;
  float *in = nullptr, *out = nullptr;
  CUDA_OK(cudaMalloc(&in, count * sizeof(float)));
  CUDA_OK(cudaMalloc(&out, count * sizeof(float)));
  cudaGraph_t g;
  cudaGraphExec_t exec;
  CUDA_OK(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal));
  COLL_OK(collAllReduce(in, out, count, collFloat32, collSum, gComm, s));
  CUDA_OK(cudaStreamEndCapture(s, &g));
  CUDA_OK(cudaGraphInstantiate(&exec, g, 0));
  std::vector<float> h(count);
  bool ok = true;
  for (int replay = 0; replay < 3 && ok; ++replay) {
    for (size_t i = 0; i < count; ++i) h[i] = float((gRank + 1) * (replay + 1)) + float(i % 7);
    CUDA_OK(cudaMemcpyAsync(in, h.data(), count * sizeof(float), cudaMemcpyHostToDevice, s));
    CUDA_OK(cudaGraphLaunch(exec, s));
    CUDA_OK(cudaMemcpyAsync(h.data(), out, count * sizeof(float), cudaMemcpyDeviceToHost, s));
    CUDA_OK(cudaStreamSynchronize(s));
    for (size_t i = 0; i < count && ok; ++i) {
      const float want = float(gN * (gN + 1) / 2 * (replay + 1)) + float(gN) * float(i % 7);
      if (h[i] != want) {
        ok = false;
        std::fprintf(stderr, "rank %d: FAIL graph replay %d: element %zu is %g, want %g\n", gRank, replay, i, h[i], want);
      }
    }
  }
  if (!ok) ++gFailures;
  else if (gRank == 0) std::printf("graph: all-reduce captured once, 3 replays with new inputs correct\n");
  CUDA_OK(cudaGraphExecDestroy(exec));
  CUDA_OK(cudaGraphDestroy(g));
  CUDA_OK(cudaFree(in));
  CUDA_OK(cudaFree(out));
}

// ------------------------------------------------------------ send/recv

// Byte i of the message from rank `from` to rank `to`.
static unsigned char p2pByte(int from, int to, size_t i, int round) {
  return static_cast<unsigned char>((from * 131 + to * 17 + round * 7 + i * 2654435761u) >> 3);
}

// Every rank sends `bytes` to each rank in `to` and receives from each in
// `from`, all in one group (or, for one pair, ungrouped), then checks.
static bool p2pRound(const std::vector<int>& to, const std::vector<int>& from, size_t bytes, int round, bool grouped,
              cudaStream_t s, const char* what) {
  std::vector<void*> sendBufs(to.size()), recvBufs(from.size());
  // Odd offsets: the unaligned copy path too.
  const size_t pad = round % 2 ? 3 : 0;
  std::vector<unsigned char> h(bytes + pad);
  for (size_t k = 0; k < to.size(); ++k) {
    CUDA_OK(cudaMalloc(&sendBufs[k], bytes + pad + 1));
    for (size_t i = 0; i < bytes; ++i) h[pad + i] = p2pByte(gRank, to[k], i, round);
    CUDA_OK(cudaMemcpy(sendBufs[k], h.data(), bytes + pad, cudaMemcpyHostToDevice));
  }
  for (size_t k = 0; k < from.size(); ++k) {
    CUDA_OK(cudaMalloc(&recvBufs[k], bytes + pad + 1));
    CUDA_OK(cudaMemset(recvBufs[k], 0, bytes + pad + 1));
  }
  settleSetup();
  if (grouped) COLL_OK(collGroupStart());
  for (size_t k = 0; k < to.size(); ++k)
    COLL_OK(collSend(static_cast<char*>(sendBufs[k]) + pad, bytes, collUint8, to[k], gComm, s));
  for (size_t k = 0; k < from.size(); ++k)
    COLL_OK(collRecv(static_cast<char*>(recvBufs[k]) + pad, bytes, collUint8, from[k], gComm, s));
  if (grouped) COLL_OK(collGroupEnd());
  CUDA_OK(cudaStreamSynchronize(s));
  bool ok = true;
  for (size_t k = 0; k < from.size() && ok; ++k) {
    CUDA_OK(cudaMemcpy(h.data(), recvBufs[k], bytes + pad, cudaMemcpyDeviceToHost));
    for (size_t i = 0; i < bytes && ok; ++i)
      if (h[pad + i] != p2pByte(from[k], gRank, i, round)) {
        ok = false;
        std::fprintf(stderr, "rank %d: FAIL %s (%zu B): byte %zu from rank %d is %u, want %u\n", gRank, what, bytes, i,
                     from[k], h[pad + i], p2pByte(from[k], gRank, i, round));
      }
  }
  for (void* b : sendBufs) CUDA_OK(cudaFree(b));
  for (void* b : recvBufs) CUDA_OK(cudaFree(b));
  if (!ok) ++gFailures;
  return ok;
}

void testSendRecv(cudaStream_t s) {
  const long before = gFailures;
  int round = 0;
  // Ring shift: to rank+1, from rank-1; sizes past the 4 x 128 KiB mailbox.
  for (size_t bytes : {size_t(1), size_t(1031), size_t(128 << 10), size_t(1200007)})
    p2pRound({(gRank + 1) % gN}, {(gRank - 1 + gN) % gN}, bytes, ++round, true, s, "ring shift");
  // All to all (self included), one group.
  std::vector<int> all(gN);
  for (int r = 0; r < gN; ++r) all[r] = r;
  for (size_t bytes : {size_t(7), size_t(300001)}) p2pRound(all, all, bytes, ++round, true, s, "all-to-all");
  // Ungrouped: rank 0 sends to the last rank, which receives.
  if (gN > 1) {
    const int last = gN - 1;
    if (gRank == 0) p2pRound({last}, {}, 3000017, ++round, false, s, "ungrouped send");
    else if (gRank == last) p2pRound({}, {0}, 3000017, ++round, false, s, "ungrouped recv");
    else ++round;
  }
  if (gRank == 0) std::printf("send/recv: ring shift, all-to-all (self included), ungrouped pair: %s\n",
                              gFailures == before ? "ok" : "FAILED");
}

void testMix() {
  float* d = nullptr;
  CUDA_OK(cudaMalloc(&d, 64 * sizeof(float)));
  std::vector<float> h(64, 1.0f);
  const collResult_t r = collAllReduce(d, h.data(), 64, collFloat32, collSum, gComm, nullptr);
  const std::string msg = collGetLastError(gComm);
  if (r != collInvalidArgument || msg.find("host") == std::string::npos) {
    ++gFailures;
    std::fprintf(stderr, "rank %d: FAIL mix: device send + host recv gave %s: %s\n", gRank, collGetErrorString(r), msg.c_str());
  } else if (gRank == 0) {
    std::printf("mix: refused: %s\n", msg.c_str());
  }
  CUDA_OK(cudaFree(d));
}

// ------------------------------------------- reduce with NULL on non-roots

void testReduceNullRecv(cudaStream_t s) {
  const long before = gFailures;
  // 1031 floats take the one-launch kernel, 70001 the staged regions.
  for (size_t count : {size_t{1031}, size_t{70001}}) {
    for (int root = 0; root < gN; ++root) {
      float *send = nullptr, *recv = nullptr;
      CUDA_OK(cudaMalloc(&send, count * sizeof(float)));
      if (gRank == root) CUDA_OK(cudaMalloc(&recv, count * sizeof(float)));
      std::vector<float> h(count);
      for (size_t i = 0; i < count; ++i) h[i] = float((i + gRank) % 7);
      CUDA_OK(cudaMemcpy(send, h.data(), count * sizeof(float), cudaMemcpyHostToDevice));
      settleSetup();
      COLL_OK(collReduce(send, recv, count, collFloat32, collSum, root, gComm, s));
      CUDA_OK(cudaStreamSynchronize(s));
      if (gRank == root) {
        CUDA_OK(cudaMemcpy(h.data(), recv, count * sizeof(float), cudaMemcpyDeviceToHost));
        for (size_t i = 0; i < count; ++i) {
          float want = 0;
          for (int r = 0; r < gN; ++r) want += float((i + r) % 7);
          if (h[i] != want) {
            ++gFailures;
            std::fprintf(stderr, "rank %d: FAIL reduce (NULL recv off root) count %zu root %d: [%zu] = %g, want %g\n",
                         gRank, count, root, i, h[i], want);
            break;
          }
        }
        CUDA_OK(cudaFree(recv));
      }
      CUDA_OK(cudaFree(send));
    }
  }
  if (gRank == 0)
    std::printf("reduce with recvbuff NULL on non-roots: %s\n", gFailures == before ? "ok" : "FAILED");
}

}  // namespace devtest
