// device_graph_checks.cu — the checks of coll_device_coll_test that order
// a communicator's calls captured into CUDA graphs: with each other across
// the capture's streams (also with two captures under way at once), and
// with the communicator's live calls wherever the graph is launched
// (device/stream_order.h).  See device_coll_test.cu.
#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "blocker.cuh"
#include "device_test_common.h"

namespace devtest {

// A group on two streams of one graph capture (the second forked from the
// first, as a caller overlapping work does): the second call reads what the
// first wrote, the third runs after both.  Only StreamOrder's events inside
// the capture order them in the graph: without them the emulated graph runs
// the two streams' calls at once (runtime_graphs.cc), as a GPU may.  Two
// replays, results checked on every rank.
void testGroupTwoStreamsInGraph() {
  if (gN < 2) return;
  const long before = gFailures;
  const TwoStreamComm t(10000);
  cudaStream_t s1 = t.s1, s2 = t.s2;
  const size_t count = 3001, countG = 1000, nr = static_cast<size_t>(gN);
  float *a = nullptr, *b = nullptr, *c = nullptr, *all = nullptr;
  CUDA_OK(cudaMalloc(&a, count * sizeof(float)));
  CUDA_OK(cudaMalloc(&b, count * sizeof(float)));
  CUDA_OK(cudaMalloc(&c, countG * sizeof(float)));
  CUDA_OK(cudaMalloc(&all, nr * countG * sizeof(float)));
  auto va = [](int rank, size_t i, int replay) { return float(i % 7 + size_t(rank) + size_t(replay)); };
  auto vc = [](int rank, size_t i, int replay) { return float((i * 3 + size_t(rank) * 5 + size_t(replay)) % 17); };
  cudaEvent_t fork, join;
  CUDA_OK(cudaEventCreateWithFlags(&fork, cudaEventDisableTiming));
  CUDA_OK(cudaEventCreateWithFlags(&join, cudaEventDisableTiming));
  cudaGraph_t g;
  cudaGraphExec_t exec;
  CUDA_OK(cudaStreamBeginCapture(s1, cudaStreamCaptureModeThreadLocal));
  CUDA_OK(cudaEventRecord(fork, s1));
  CUDA_OK(cudaStreamWaitEvent(s2, fork, 0));
  COLL_OK(collGroupStart());
  COLL_OK(collAllReduce(a, a, count, collFloat32, collSum, t.comm, s1));
  COLL_OK(collAllReduce(a, b, count, collFloat32, collSum, t.comm, s2));
  COLL_OK(collAllGather(c, all, countG, collFloat32, t.comm, s1));
  COLL_OK(collGroupEnd());
  CUDA_OK(cudaEventRecord(join, s2));
  CUDA_OK(cudaStreamWaitEvent(s1, join, 0));
  CUDA_OK(cudaStreamEndCapture(s1, &g));
  CUDA_OK(cudaGraphInstantiate(&exec, g, 0));
  for (int replay = 0; replay < 2; ++replay) {
    uploadFloats(a, count, [&](size_t i) { return va(gRank, i, replay); });
    uploadFloats(c, countG, [&](size_t i) { return vc(gRank, i, replay); });
    settleSetup();
    CUDA_OK(cudaGraphLaunch(exec, s1));
    CUDA_OK(cudaStreamSynchronize(s1));
    auto sum = [&](size_t i) { return sumOverRanks([&](int r) { return va(r, i, replay); }); };
    const std::string at = ", replay " + std::to_string(replay);
    expectFloats(("two-stream graph: all-reduce on the first" + at).c_str(), a, count, sum);
    expectFloats(("two-stream graph: all-reduce of its result on the second" + at).c_str(), b, count,
                 [&](size_t i) { return float(gN) * sum(i); });
    expectFloats(("two-stream graph: all-gather" + at).c_str(), all, nr * countG,
                 [&](size_t i) { return vc(int(i / countG), i % countG, replay); });
  }
  expectNoAsyncError("group on two streams in a graph", t.comm);
  CUDA_OK(cudaGraphExecDestroy(exec));
  CUDA_OK(cudaGraphDestroy(g));
  CUDA_OK(cudaEventDestroy(fork));
  CUDA_OK(cudaEventDestroy(join));
  for (float* p : {a, b, c, all}) CUDA_OK(cudaFree(p));
  if (gRank == 0)
    std::printf("group on two streams of one graph, 2 replays: calls in order: %s\n",
                gFailures == before ? "ok" : "FAILED");
}

// A graph of one all-reduce, launched on one stream while the same
// communicator's live calls go to another.  First a live call held on rank
// 0, then the launch: the launch must wait for it (the graph's event wait
// node).  Then a launch held on rank 0, then a live call that reads the
// graph's result: that must wait for the launch (its event record node).
// Without the first node the two calls run at once on rank 0 and pair with
// the wrong calls of the other ranks; without the second, rank 0's live
// call reads the result before the launch wrote it.  Results checked on
// every rank.
void testGraphOrderedWithLive() {
  if (gN < 2) return;
  const long before = gFailures;
  const int timeoutMs = 10000;
  const TwoStreamComm t(timeoutMs);
  const size_t count = 4099;
  float *g = nullptr, *a = nullptr, *c = nullptr;
  for (float** p : {&g, &a, &c}) CUDA_OK(cudaMalloc(p, count * sizeof(float)));
  auto v = [](int rank, size_t i, int which) { return float(i % 5 + size_t(rank) + size_t(which) * 7); };
  for (int which = 0; which < 2; ++which)
    uploadFloats(which == 0 ? g : a, count, [&](size_t i) { return v(gRank, i, which); });
  settleSetup();
  cudaGraph_t graph;
  cudaGraphExec_t exec;
  CUDA_OK(cudaStreamBeginCapture(t.s1, cudaStreamCaptureModeThreadLocal));
  COLL_OK(collAllReduce(g, g, count, collFloat32, collSum, t.comm, t.s1));
  CUDA_OK(cudaStreamEndCapture(t.s1, &graph));
  CUDA_OK(cudaGraphInstantiate(&exec, graph, 0));
  // Every rank has queued both calls before rank 0 lets its first go.
  auto releaseAfterAll = [&](Blocker& b) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    int one = 1, all = 0;
    COLL_OK(collAllReduce(&one, &all, 1, collInt32, collSum, gComm, nullptr));
    b.release();
    CUDA_OK(cudaStreamSynchronize(t.s1));
    CUDA_OK(cudaStreamSynchronize(t.s2));
  };
  {
    Blocker held;
    if (gRank == 0) held.hold(t.s2, 2ull * timeoutMs * 1000 * 1000);
    COLL_OK(collAllReduce(a, a, count, collFloat32, collSum, t.comm, t.s2));
    CUDA_OK(cudaGraphLaunch(exec, t.s1));
    releaseAfterAll(held);
  }
  {
    Blocker held;
    if (gRank == 0) held.hold(t.s1, 2ull * timeoutMs * 1000 * 1000);
    CUDA_OK(cudaGraphLaunch(exec, t.s1));
    COLL_OK(collAllReduce(g, c, count, collFloat32, collSum, t.comm, t.s2));
    releaseAfterAll(held);
  }
  auto sum = [&](size_t i, int which) { return sumOverRanks([&](int r) { return v(r, i, which); }); };
  expectFloats("live call, then a graph launched on another stream", a, count, [&](size_t i) { return sum(i, 1); });
  expectFloats("a graph launched twice (in place)", g, count, [&](size_t i) { return float(gN) * sum(i, 0); });
  expectFloats("a graph launch, then a live call on another stream reading its result", c, count,
               [&](size_t i) { return float(gN) * float(gN) * sum(i, 0); });
  expectNoAsyncError("graph and live calls of one communicator", t.comm);
  CUDA_OK(cudaGraphExecDestroy(exec));
  CUDA_OK(cudaGraphDestroy(graph));
  for (float* p : {g, a, c}) CUDA_OK(cudaFree(p));
  if (gRank == 0)
    std::printf("graph launches and live calls of one communicator on two streams, both ways: in order: %s\n",
                gFailures == before ? "ok" : "FAILED");
}

// Two captures of one communicator at once, each from a stream and a fork
// of it, their calls interleaved: in each graph the call on the fork reads
// what the origin's call wrote, so each capture must keep its own order
// (StreamOrder keeps one event per capture in progress).  Graph A launched,
// then B; results checked on every rank.
void testCapturesInterleaved() {
  if (gN < 2) return;
  const long before = gFailures;
  const TwoStreamComm t(10000);
  cudaStream_t s3, s4;
  CUDA_OK(cudaStreamCreateWithFlags(&s3, cudaStreamNonBlocking));
  CUDA_OK(cudaStreamCreateWithFlags(&s4, cudaStreamNonBlocking));
  const size_t count = 2003;
  float *inA = nullptr, *outA = nullptr, *inB = nullptr, *outB = nullptr;
  for (float** p : {&inA, &outA, &inB, &outB}) CUDA_OK(cudaMalloc(p, count * sizeof(float)));
  auto v = [](int rank, size_t i, int which) { return float(i % 3 + size_t(rank) * 2 + size_t(which)); };
  for (int which = 0; which < 2; ++which)
    uploadFloats(which == 0 ? inA : inB, count, [&](size_t i) { return v(gRank, i, which); });
  settleSetup();
  cudaEvent_t ev[4];
  for (cudaEvent_t& e : ev) CUDA_OK(cudaEventCreateWithFlags(&e, cudaEventDisableTiming));
  auto fork = [&](cudaStream_t from, cudaStream_t to, cudaEvent_t e) {
    CUDA_OK(cudaEventRecord(e, from));
    CUDA_OK(cudaStreamWaitEvent(to, e, 0));
  };
  CUDA_OK(cudaStreamBeginCapture(t.s1, cudaStreamCaptureModeThreadLocal));
  CUDA_OK(cudaStreamBeginCapture(s3, cudaStreamCaptureModeThreadLocal));
  fork(t.s1, t.s2, ev[0]);
  fork(s3, s4, ev[1]);
  COLL_OK(collAllReduce(inA, inA, count, collFloat32, collSum, t.comm, t.s1));
  COLL_OK(collAllReduce(inB, inB, count, collFloat32, collSum, t.comm, s3));
  COLL_OK(collAllReduce(inA, outA, count, collFloat32, collSum, t.comm, t.s2));
  COLL_OK(collAllReduce(inB, outB, count, collFloat32, collSum, t.comm, s4));
  fork(t.s2, t.s1, ev[2]);  // the joins
  fork(s4, s3, ev[3]);
  cudaGraph_t gA, gB;
  cudaGraphExec_t xA, xB;
  CUDA_OK(cudaStreamEndCapture(t.s1, &gA));
  CUDA_OK(cudaStreamEndCapture(s3, &gB));
  CUDA_OK(cudaGraphInstantiate(&xA, gA, 0));
  CUDA_OK(cudaGraphInstantiate(&xB, gB, 0));
  CUDA_OK(cudaGraphLaunch(xA, t.s1));
  CUDA_OK(cudaGraphLaunch(xB, s3));
  CUDA_OK(cudaStreamSynchronize(t.s1));
  CUDA_OK(cudaStreamSynchronize(s3));
  auto sum = [&](size_t i, int which) { return sumOverRanks([&](int r) { return v(r, i, which); }); };
  expectFloats("interleaved captures: graph A's second call (on its fork)", outA, count,
               [&](size_t i) { return float(gN) * sum(i, 0); });
  expectFloats("interleaved captures: graph B's second call (on its fork)", outB, count,
               [&](size_t i) { return float(gN) * sum(i, 1); });
  expectNoAsyncError("interleaved captures", t.comm);
  for (cudaGraphExec_t x : {xA, xB}) CUDA_OK(cudaGraphExecDestroy(x));
  for (cudaGraph_t g : {gA, gB}) CUDA_OK(cudaGraphDestroy(g));
  for (cudaEvent_t e : ev) CUDA_OK(cudaEventDestroy(e));
  for (float* p : {inA, outA, inB, outB}) CUDA_OK(cudaFree(p));
  for (cudaStream_t s : {s3, s4}) CUDA_OK(cudaStreamDestroy(s));
  if (gRank == 0)
    std::printf("two captures of one communicator at once, interleaved: each in its order: %s\n",
                gFailures == before ? "ok" : "FAILED");
}

}  // namespace devtest
