// device_group_checks.cu — the group checks of coll_device_coll_test: small
// and large all-reduces and a reduce in one group, a group whose calls read
// what earlier ones wrote, a group on two streams, a group past the
// stream-operation budget, and a group of every collective captured into a
// CUDA graph (one kernel node with the program kernel on).  See
// device_coll_test.cu.
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "blocker.cuh"
#include "device_test_common.h"

namespace devtest {

// ------------------------------------------------ a group of collectives

// Small all-reduces and reduces in one group share launches; a large one in
// between splits the run; a call after the group still matches on every
// rank (the call numbers stayed aligned).
void testGroup(cudaStream_t s) {
  const long before = gFailures;
  const std::vector<size_t> counts = {1, 7, 100, 1031, 3000, 100000, 5, 2048, 64};
  std::vector<float*> bufs(counts.size());
  for (size_t k = 0; k < counts.size(); ++k) {
    CUDA_OK(cudaMalloc(&bufs[k], counts[k] * sizeof(float)));
    std::vector<float> h(counts[k]);
    for (size_t i = 0; i < counts[k]; ++i) h[i] = float((i * 3 + k + gRank) % 11);
    CUDA_OK(cudaMemcpy(bufs[k], h.data(), counts[k] * sizeof(float), cudaMemcpyHostToDevice));
  }
  settleSetup();
  const int root = gN - 1;
  COLL_OK(collGroupStart());
  for (size_t k = 0; k < counts.size(); ++k) {
    if (k == 2) COLL_OK(collReduce(bufs[k], bufs[k], counts[k], collFloat32, collSum, root, gComm, s));
    else COLL_OK(collAllReduce(bufs[k], bufs[k], counts[k], collFloat32, collSum, gComm, s));
  }
  COLL_OK(collGroupEnd());
  float* after = nullptr;
  CUDA_OK(cudaMalloc(&after, sizeof(float)));
  const float one = 1.0f;
  CUDA_OK(cudaMemcpy(after, &one, sizeof one, cudaMemcpyHostToDevice));
  settleSetup();  // the group's calls on s are queued, not run: this waits for them too
  COLL_OK(collAllReduce(after, after, 1, collFloat32, collSum, gComm, s));
  CUDA_OK(cudaStreamSynchronize(s));
  for (size_t k = 0; k < counts.size(); ++k) {
    if (k == 2 && gRank != root) continue;  // a reduce's non-root keeps its input
    std::vector<float> h(counts[k]);
    CUDA_OK(cudaMemcpy(h.data(), bufs[k], counts[k] * sizeof(float), cudaMemcpyDeviceToHost));
    for (size_t i = 0; i < counts[k]; ++i) {
      float want = 0;
      for (int r = 0; r < gN; ++r) want += float((i * 3 + k + r) % 11);
      if (h[i] != want) {
        ++gFailures;
        std::fprintf(stderr, "rank %d: FAIL group call %zu (count %zu): [%zu] = %g, want %g\n", gRank, k, counts[k], i,
                     h[i], want);
        break;
      }
    }
  }
  float got = 0;
  CUDA_OK(cudaMemcpy(&got, after, sizeof got, cudaMemcpyDeviceToHost));
  if (got != float(gN)) {
    ++gFailures;
    std::fprintf(stderr, "rank %d: FAIL all-reduce after the group: %g, want %d\n", gRank, got, gN);
  }
  expectNoAsyncError("group");
  for (float* b : bufs) CUDA_OK(cudaFree(b));
  CUDA_OK(cudaFree(after));
  if (gRank == 0) std::printf("group of small and large all-reduces and a reduce: %s\n",
                              gFailures == before ? "ok" : "FAILED");
}

// ------------------------------------- a group whose calls depend on each other

// Each call reads what an earlier call of the same group wrote (or writes
// what an earlier one read): the results must be those of the calls run one
// after another, whichever launches the group takes (one program launch for
// the large ones, one fused launch for small all-reduces).
void testGroupDependent(cudaStream_t s) {
  const long before = gFailures;
  const size_t c = 50021, nr = static_cast<size_t>(gN), cs = 24;
  const int root = gN - 1;
  auto v = [](int r, size_t i) { return float((i * 5 + size_t(r)) % 7); };
  auto w = [](int r, size_t i) { return float((i + 2 * size_t(r)) % 5); };
  auto d = [](int r, size_t i) { return float((i * 3 + size_t(r)) % 9); };
  float *in = nullptr, *all = nullptr, *mine = nullptr, *bc = nullptr, *sm = nullptr;
  CUDA_OK(cudaMalloc(&in, c * sizeof(float)));
  CUDA_OK(cudaMalloc(&all, nr * c * sizeof(float)));
  CUDA_OK(cudaMalloc(&mine, c * sizeof(float)));
  CUDA_OK(cudaMalloc(&bc, c * sizeof(float)));
  CUDA_OK(cudaMalloc(&sm, cs * sizeof(float)));
  auto fill = [&](float* p, size_t n, auto f) {
    std::vector<float> h(n);
    for (size_t i = 0; i < n; ++i) h[i] = f(gRank, i);
    CUDA_OK(cudaMemcpy(p, h.data(), n * sizeof(float), cudaMemcpyHostToDevice));
  };
  fill(in, c, v);
  fill(bc, c, d);
  fill(sm, cs, w);
  settleSetup();
  COLL_OK(collGroupStart());
  COLL_OK(collAllGather(in, all, c, collFloat32, gComm, s));                          // all[r c + i] = v(r, i)
  COLL_OK(collAllReduce(all, all, nr * c, collFloat32, collSum, gComm, s));           // x N
  COLL_OK(collReduceScatter(all, mine, c, collFloat32, collSum, gComm, s));           // x N: N^2 v(rank, i)
  COLL_OK(collAllReduce(mine, mine, c, collFloat32, collSum, gComm, s));              // N^2 sum_r v(r, i)
  COLL_OK(collBroadcast(bc, in, c, collFloat32, root, gComm, s));                     // overwrites call 1's input
  COLL_OK(collAllReduce(sm, sm, cs, collFloat32, collSum, gComm, s));                 // sum_r w(r, i)
  COLL_OK(collAllReduce(sm, sm, cs, collFloat32, collSum, gComm, s));                 // x N
  COLL_OK(collGroupEnd());
  CUDA_OK(cudaStreamSynchronize(s));
  const float n2 = float(gN * gN);
  auto check = [&](const char* what, const float* p, size_t n, auto want) {
    expectFloats((std::string("dependent group, ") + what).c_str(), p, n, want);
  };
  auto sumOver = [&](auto f, size_t i) { return sumOverRanks([&](int r) { return f(r, i); }); };
  check("all-reduce of the all-gather", all, nr * c, [&](size_t i) { return float(gN) * v(int(i / c), i % c); });
  check("all-reduce of the reduce-scatter", mine, c, [&](size_t i) { return n2 * sumOver(v, i); });
  check("broadcast into the all-gather's input", in, c, [&](size_t i) { return d(root, i); });
  check("small all-reduce twice", sm, cs, [&](size_t i) { return float(gN) * sumOver(w, i); });
  expectNoAsyncError("dependent group");
  for (float* p : {in, all, mine, bc, sm}) CUDA_OK(cudaFree(p));
  if (gRank == 0) std::printf("group of 7 calls, each on an earlier one's buffers: %s\n",
                              gFailures == before ? "ok" : "FAILED");
}

// ---------------------------------------------------- a group on two streams

// A group whose calls use two streams ends with both waiting for all of it,
// as in NCCL: a copy queued on the first call's stream after the group waits
// for the second call, which a blocker on its stream holds back on rank 0
// (and so, through their barriers, on every rank).
void testGroupJoinsStreams() {
  if (gN < 2) return;
  const long before = gFailures;
  const int timeoutMs = 10000;
  const TwoStreamComm t(timeoutMs);
  collComm_t c = t.comm;
  cudaStream_t s1 = t.s1, s2 = t.s2;
  const size_t countA = 1000, countB = 3001;
  float *a = nullptr, *bIn = nullptr, *bOut = nullptr, *host = nullptr;
  CUDA_OK(cudaMalloc(&a, countA * sizeof(float)));
  CUDA_OK(cudaMalloc(&bIn, countB * sizeof(float)));
  CUDA_OK(cudaMalloc(&bOut, countB * sizeof(float)));
  CUDA_OK(cudaHostAlloc(&host, countB * sizeof(float), cudaHostAllocDefault));
  std::vector<float> ha(countA, float(gRank + 1)), hb(countB, float(10 * (gRank + 1))), unset(countB, -1.0f);
  CUDA_OK(cudaMemcpy(a, ha.data(), countA * sizeof(float), cudaMemcpyHostToDevice));
  CUDA_OK(cudaMemcpy(bIn, hb.data(), countB * sizeof(float), cudaMemcpyHostToDevice));
  CUDA_OK(cudaMemcpy(bOut, unset.data(), countB * sizeof(float), cudaMemcpyHostToDevice));
  settleSetup();
  Blocker blocker;
  if (gRank == 0) blocker.hold(s2, 2ull * timeoutMs * 1000 * 1000);
  COLL_OK(collGroupStart());
  COLL_OK(collAllReduce(a, a, countA, collFloat32, collSum, c, s1));
  COLL_OK(collAllReduce(bIn, bOut, countB, collFloat32, collSum, c, s2));
  COLL_OK(collGroupEnd());
  CUDA_OK(cudaMemcpyAsync(host, bOut, countB * sizeof(float), cudaMemcpyDeviceToHost, s1));
  cudaEvent_t copied;
  CUDA_OK(cudaEventCreateWithFlags(&copied, cudaEventDisableTiming));
  CUDA_OK(cudaEventRecord(copied, s1));
  std::this_thread::sleep_for(std::chrono::milliseconds(300));  // an unjoined s1 would have copied by now
  const cudaError_t early = cudaEventQuery(copied);
  // Every rank has looked before rank 0 lets its second call go (a rank
  // that came late to the group, slower setup over netsim's links say,
  // would otherwise look after that).
  int one = 1, all = 0;
  COLL_OK(collAllReduce(&one, &all, 1, collInt32, collSum, gComm, nullptr));
  blocker.release();
  CUDA_OK(cudaStreamSynchronize(s1));
  CUDA_OK(cudaStreamSynchronize(s2));
  const float want = float(gN * (gN + 1) / 2);
  size_t bad = 0;
  for (size_t i = 0; i < countB; ++i) bad += host[i] != 10 * want;
  if (early != cudaErrorNotReady || bad != 0) {
    ++gFailures;
    std::fprintf(stderr, "rank %d: FAIL group on two streams: the copy after it on the first stream %s while the "
                 "second call was held; %zu of %zu elements copied wrong\n", gRank,
                 early == cudaSuccess ? "completed" : cudaGetErrorString(early), bad, countB);
  }
  expectNoAsyncError("group on two streams", c);
  CUDA_OK(cudaEventDestroy(copied));
  for (float* p : {a, bIn, bOut}) CUDA_OK(cudaFree(p));
  CUDA_OK(cudaFreeHost(host));
  if (gRank == 0) std::printf("group on two streams: both waited for the whole group: %s\n",
                              gFailures == before ? "ok" : "FAILED");
}

// ------------------------------- a group past the stream-operation budget

// 72 all-reduces of 40 KiB in one group: each alone queues a few stream
// operations (one piece, one-shot: N + 2), together more than the budget
// (schedule/device_stream_ops.h), so by default the group takes the program
// kernel; the emulated runtime counts what the group queued.  Results
// checked on every rank.
void testGroupBudget(cudaStream_t s) {
  if (gN < 2 || gStaged) return;
  const long before = gFailures;
  const size_t calls = 72, count = 10240;
  float* d = nullptr;
  CUDA_OK(cudaMalloc(&d, calls * count * sizeof(float)));
  std::vector<float> h(calls * count);
  for (size_t i = 0; i < h.size(); ++i) h[i] = float((i * 7 + size_t(gRank)) % 17);
  CUDA_OK(cudaMemcpy(d, h.data(), h.size() * sizeof(float), cudaMemcpyHostToDevice));
  settleSetup();
  const uint64_t opsBefore = streamOpsQueued(s);
  COLL_OK(collGroupStart());
  for (size_t k = 0; k < calls; ++k)
    COLL_OK(collAllReduce(d + k * count, d + k * count, count, collFloat32, collSum, gComm, s));
  COLL_OK(collGroupEnd());
  checkStreamOps("a group of 72 all-reduces", opsBefore, s);
  CUDA_OK(cudaStreamSynchronize(s));
  CUDA_OK(cudaMemcpy(h.data(), d, h.size() * sizeof(float), cudaMemcpyDeviceToHost));
  for (size_t i = 0; i < h.size(); ++i) {
    float want = 0;
    for (int r = 0; r < gN; ++r) want += float((i * 7 + size_t(r)) % 17);
    if (h[i] != want) {
      ++gFailures;
      std::fprintf(stderr, "rank %d: FAIL group of %zu all-reduces: element %zu = %g, want %g\n", gRank, calls, i, h[i],
                   want);
      break;
    }
  }
  expectNoAsyncError("group past the budget");
  CUDA_OK(cudaFree(d));
  if (gRank == 0) std::printf("group of %zu all-reduces (past the stream-operation budget): %s\n", calls,
                              gFailures == before ? "ok" : "FAILED");
}

// ------------------------------------ a group of large calls, one kernel

// A group of every collective, large and small, captured into a CUDA graph.
// With COLL_DEVICE_PROGRAM=1 the graph must hold one kernel node and
// nothing else but the event nodes that order it with the communicator's
// other work (one launch for the whole group); so too by default at 2-4
// ranks, where the group's 1.2 MB all-reduce takes the program kernel
// (sched::programByDefault), when the entry says the IPC path is sure
// (COLL_TEST_EXPECT_IPC=1: not staged, peers mapped).  Either way two
// replays with new inputs must give the right results on every rank.
void testGroupOneKernel(cudaStream_t s) {
  const long before = gFailures;
  const char* env = std::getenv("COLL_DEVICE_PROGRAM");
  const bool byDefault = env == nullptr && std::getenv("COLL_TEST_EXPECT_IPC") != nullptr && gN >= 2 && gN <= 4;
  const bool program = (env != nullptr && std::strcmp(env, "1") == 0 && gN >= 2) || byDefault;
  const size_t nr = static_cast<size_t>(gN);
  const int root = 1 % gN;
  // all-reduce 1.2 MB, all-gather, broadcast, reduce-scatter, small all-reduce
  const size_t cAr = 300007, cAg = 50021, cBc = 70001, cRs = 40009, cSm = 100;
  float *ar = nullptr, *agIn = nullptr, *agOut = nullptr, *bc = nullptr, *rsIn = nullptr, *rsOut = nullptr, *sm = nullptr;
  CUDA_OK(cudaMalloc(&ar, cAr * sizeof(float)));
  CUDA_OK(cudaMalloc(&agIn, cAg * sizeof(float)));
  CUDA_OK(cudaMalloc(&agOut, nr * cAg * sizeof(float)));
  CUDA_OK(cudaMalloc(&bc, cBc * sizeof(float)));
  CUDA_OK(cudaMalloc(&rsIn, nr * cRs * sizeof(float)));
  CUDA_OK(cudaMalloc(&rsOut, cRs * sizeof(float)));
  CUDA_OK(cudaMalloc(&sm, cSm * sizeof(float)));
  auto value = [](int call, int rank, size_t i, int replay) { return float((i * 5 + call * 3 + rank + replay) % 13); };
  auto fill = [&](float* d, size_t n, int call, int replay) {
    std::vector<float> h(n);
    for (size_t i = 0; i < n; ++i) h[i] = value(call, gRank, i, replay);
    CUDA_OK(cudaMemcpyAsync(d, h.data(), n * sizeof(float), cudaMemcpyHostToDevice, s));
    CUDA_OK(cudaStreamSynchronize(s));
  };

  cudaGraph_t g;
  cudaGraphExec_t exec;
  CUDA_OK(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal));
  COLL_OK(collGroupStart());
  COLL_OK(collAllReduce(ar, ar, cAr, collFloat32, collSum, gComm, s));
  COLL_OK(collAllGather(agIn, agOut, cAg, collFloat32, gComm, s));
  COLL_OK(collBroadcast(bc, bc, cBc, collFloat32, root, gComm, s));
  COLL_OK(collReduceScatter(rsIn, rsOut, cRs, collFloat32, collSum, gComm, s));
  COLL_OK(collAllReduce(sm, sm, cSm, collFloat32, collSum, gComm, s));
  COLL_OK(collGroupEnd());
  CUDA_OK(cudaStreamEndCapture(s, &g));
  size_t nodes = 0;
  CUDA_OK(cudaGraphGetNodes(g, nullptr, &nodes));
  std::vector<cudaGraphNode_t> list(nodes);
  CUDA_OK(cudaGraphGetNodes(g, list.data(), &nodes));
  size_t kernels = 0, events = 0;  // events: the nodes that order the graph with the communicator's other work
  for (cudaGraphNode_t n : list) {
    cudaGraphNodeType t;
    CUDA_OK(cudaGraphNodeGetType(n, &t));
    if (t == cudaGraphNodeTypeKernel) ++kernels;
    if (t == cudaGraphNodeTypeWaitEvent || t == cudaGraphNodeTypeEventRecord) ++events;
  }
  if (program && (kernels != 1 || nodes != kernels + events)) {
    ++gFailures;
    std::fprintf(stderr, "rank %d: FAIL group of 5 collectives: %zu graph nodes, %zu kernels, %zu event nodes "
                 "(want 1 kernel node and event nodes)\n", gRank, nodes, kernels, events);
  }
  CUDA_OK(cudaGraphInstantiate(&exec, g, 0));

  for (int replay = 0; replay < 2; ++replay) {
    fill(ar, cAr, 0, replay);
    fill(agIn, cAg, 1, replay);
    fill(bc, cBc, 2, replay);
    fill(rsIn, nr * cRs, 3, replay);
    fill(sm, cSm, 4, replay);
    CUDA_OK(cudaGraphLaunch(exec, s));
    CUDA_OK(cudaStreamSynchronize(s));
    auto check = [&](const char* what, const float* d, size_t n, auto want) {
      expectFloats(("grouped " + std::string(what) + ", replay " + std::to_string(replay)).c_str(), d, n, want);
    };
    auto sum = [&](int call, size_t i) { return sumOverRanks([&](int r) { return value(call, r, i, replay); }); };
    check("all-reduce", ar, cAr, [&](size_t i) { return sum(0, i); });
    check("all-gather", agOut, nr * cAg, [&](size_t i) { return value(1, int(i / cAg), i % cAg, replay); });
    check("broadcast", bc, cBc, [&](size_t i) { return value(2, root, i, replay); });
    check("reduce-scatter", rsOut, cRs, [&](size_t i) { return sum(3, size_t(gRank) * cRs + i); });
    check("small all-reduce", sm, cSm, [&](size_t i) { return sum(4, i); });
  }
  expectNoAsyncError("grouped graph");
  CUDA_OK(cudaGraphExecDestroy(exec));
  CUDA_OK(cudaGraphDestroy(g));
  for (float* b : {ar, agIn, agOut, bc, rsIn, rsOut, sm}) CUDA_OK(cudaFree(b));
  if (gRank == 0)
    std::printf("group of 5 collectives in a graph: %zu node(s), %zu kernel(s)%s, %zu event node(s), 2 replays: %s\n",
                nodes, kernels, program ? " (program kernel: want 1)" : "", events, gFailures == before ? "ok" : "FAILED");
}

}  // namespace devtest
