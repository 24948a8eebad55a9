// The emulated runtime's stream capture across several streams
// (kernels/cuda/emulation/runtime_graphs.cc): a stream joins a capture by
// waiting on an event recorded in it, the captured streams' work runs at
// once when the graph is launched, ordered only by the events between
// them, and the capture's rules hold as CUDA's do (a fork must be joined,
// no dependency crosses a capture's boundary, a capture ends where it
// began); event record and wait nodes (cudaEventRecordExternal /
// cudaEventWaitExternal) order a launch with live work.  libcoll's
// StreamOrder relies on these to keep a communicator's
// captured calls in order (tests/gpu's group-in-a-graph check).
#include "cuda_emulation.h"  // the built-ins, for the test kernels

#include <catch2/catch.hpp>

#include <atomic>
#include <chrono>
#include <vector>

#include "coll/kernel_launch.h"

namespace {

// Flags the test kernels share (host memory: the emulated kernels are host
// threads).
struct Flags {
  std::atomic<int> a{0}, b{0};
};

// Sets *mine, then waits (up to 5 s) for *theirs: returns only if the other
// kernel runs at the same time.  *met records whether it did.
__global__ void meet(std::atomic<int>* mine, std::atomic<int>* theirs, int* met) {
  if (threadIdx.x != 0) return;
  mine->fetch_add(1);
  const auto end = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  while (theirs->load() == 0 && std::chrono::steady_clock::now() < end) std::this_thread::yield();
  *met = theirs->load() != 0;
}

// Waits (up to 5 s) for *flag.
__global__ void waitFlag(std::atomic<int>* flag) {
  if (threadIdx.x != 0) return;
  const auto end = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  while (flag->load() == 0 && std::chrono::steady_clock::now() < end) std::this_thread::yield();
}

__global__ void observe(std::atomic<int>* flag, int* out) {
  if (threadIdx.x == 0) *out = flag->load();
}

__global__ void store(int* out, int value) {
  if (threadIdx.x == 0) *out = value;
}

__global__ void addOne(const int* in, int* out) {
  if (threadIdx.x == 0) *out = *in + 1;
}

struct Streams {
  Streams() {
    REQUIRE(cudaStreamCreateWithFlags(&s1, cudaStreamNonBlocking) == cudaSuccess);
    REQUIRE(cudaStreamCreateWithFlags(&s2, cudaStreamNonBlocking) == cudaSuccess);
    REQUIRE(cudaEventCreate(&fork) == cudaSuccess);
    REQUIRE(cudaEventCreate(&join) == cudaSuccess);
  }
  ~Streams() {
    (void)cudaEventDestroy(fork);
    (void)cudaEventDestroy(join);
    (void)cudaStreamDestroy(s1);
    (void)cudaStreamDestroy(s2);
  }
  cudaStream_t s1 = nullptr, s2 = nullptr;
  cudaEvent_t fork = nullptr, join = nullptr;
};

cudaStreamCaptureStatus captureStatus(cudaStream_t s) {
  cudaStreamCaptureStatus st = cudaStreamCaptureStatusNone;
  REQUIRE(cudaStreamIsCapturing(s, &st) == cudaSuccess);
  return st;
}

}  // namespace

TEST_CASE("a stream joins a capture by waiting on its event; the graph's streams run at once, ordered by events") {
  Streams t;
  Flags flags;
  int* met = nullptr;
  REQUIRE(cudaMallocHost(&met, 4 * sizeof(int)) == cudaSuccess);
  REQUIRE(cudaStreamBeginCapture(t.s1, cudaStreamCaptureModeThreadLocal) == cudaSuccess);
  REQUIRE(cudaEventRecord(t.fork, t.s1) == cudaSuccess);
  CHECK(captureStatus(t.s2) == cudaStreamCaptureStatusNone);
  REQUIRE(cudaStreamWaitEvent(t.s2, t.fork, 0) == cudaSuccess);
  CHECK(captureStatus(t.s2) == cudaStreamCaptureStatusActive);
  cudaStreamCaptureStatus st1, st2;
  unsigned long long id1 = 0, id2 = 0;
  REQUIRE(cudaStreamGetCaptureInfo(t.s1, &st1, &id1) == cudaSuccess);
  REQUIRE(cudaStreamGetCaptureInfo(t.s2, &st2, &id2) == cudaSuccess);
  CHECK(st2 == cudaStreamCaptureStatusActive);
  CHECK((id1 == id2 && id1 != 0));
  // Two kernels that return only if they run at the same time, one per
  // stream; then s2 stores 41, and s1, after the join, adds one to it.
  REQUIRE(coll::cuda::launch(meet, dim3(1), dim3(2), 0, t.s1, &flags.a, &flags.b, met) == cudaSuccess);
  REQUIRE(coll::cuda::launch(meet, dim3(1), dim3(2), 0, t.s2, &flags.b, &flags.a, met + 1) == cudaSuccess);
  REQUIRE(coll::cuda::launch(store, dim3(1), dim3(1), 0, t.s2, met + 2, 41) == cudaSuccess);
  REQUIRE(cudaEventRecord(t.join, t.s2) == cudaSuccess);
  REQUIRE(cudaStreamWaitEvent(t.s1, t.join, 0) == cudaSuccess);
  REQUIRE(coll::cuda::launch(addOne, dim3(1), dim3(1), 0, t.s1, static_cast<const int*>(met + 2), met + 3) ==
          cudaSuccess);
  cudaGraph_t g = nullptr;
  REQUIRE(cudaStreamEndCapture(t.s1, &g) == cudaSuccess);
  CHECK(captureStatus(t.s2) == cudaStreamCaptureStatusNone);
  size_t nodes = 0;
  REQUIRE(cudaGraphGetNodes(g, nullptr, &nodes) == cudaSuccess);
  CHECK(nodes == 4);  // the kernels; the events are edges
  cudaGraphExec_t x;
  REQUIRE(cudaGraphInstantiate(&x, g, 0) == cudaSuccess);
  for (int replay = 0; replay < 2; ++replay) {
    flags.a = 0;
    flags.b = 0;
    for (int i = 0; i < 4; ++i) met[i] = -1;
    REQUIRE(cudaGraphLaunch(x, t.s1) == cudaSuccess);
    REQUIRE(cudaStreamSynchronize(t.s1) == cudaSuccess);  // the whole graph: its lanes joined s1
    CHECK(met[0] == 1);
    CHECK(met[1] == 1);
    CHECK(met[3] == 42);
  }
  REQUIRE(cudaGraphExecDestroy(x) == cudaSuccess);
  REQUIRE(cudaGraphDestroy(g) == cudaSuccess);
  REQUIRE(cudaFreeHost(met) == cudaSuccess);
}

TEST_CASE("external event nodes: a graph waits for the event's record before its launch; later waits see its own") {
  Streams t;
  cudaStream_t s3;
  REQUIRE(cudaStreamCreateWithFlags(&s3, cudaStreamNonBlocking) == cudaSuccess);
  Flags flags;  // a: the live stream's hold, b: the graph's
  int* h = nullptr;  // [0] a as the graph saw it, [1] the graph's store, [2] the later stream's
  REQUIRE(cudaMallocHost(&h, 3 * sizeof(int)) == cudaSuccess);
  h[0] = h[1] = h[2] = -1;
  REQUIRE(cudaStreamBeginCapture(t.s2, cudaStreamCaptureModeThreadLocal) == cudaSuccess);
  REQUIRE(cudaStreamWaitEvent(t.s2, t.fork, cudaEventWaitExternal) == cudaSuccess);
  REQUIRE(coll::cuda::launch(observe, dim3(1), dim3(1), 0, t.s2, &flags.a, h) == cudaSuccess);
  REQUIRE(coll::cuda::launch(waitFlag, dim3(1), dim3(1), 0, t.s2, &flags.b) == cudaSuccess);
  REQUIRE(coll::cuda::launch(store, dim3(1), dim3(1), 0, t.s2, h + 1, 1) == cudaSuccess);
  REQUIRE(cudaEventRecordWithFlags(t.fork, t.s2, cudaEventRecordExternal) == cudaSuccess);
  cudaGraph_t g = nullptr;
  REQUIRE(cudaStreamEndCapture(t.s2, &g) == cudaSuccess);
  size_t n = 0;
  REQUIRE(cudaGraphGetNodes(g, nullptr, &n) == cudaSuccess);
  REQUIRE(n == 5);
  std::vector<cudaGraphNode_t> nodes(n);
  REQUIRE(cudaGraphGetNodes(g, nodes.data(), &n) == cudaSuccess);
  cudaGraphNodeType first, last;
  REQUIRE(cudaGraphNodeGetType(nodes[0], &first) == cudaSuccess);
  REQUIRE(cudaGraphNodeGetType(nodes[4], &last) == cudaSuccess);
  CHECK(first == cudaGraphNodeTypeWaitEvent);
  CHECK(last == cudaGraphNodeTypeEventRecord);
  cudaGraphExec_t x;
  REQUIRE(cudaGraphInstantiate(&x, g, 0) == cudaSuccess);

  // Live: s1 held until a is set, then records the event; the graph on s2;
  // then s3 waits for the event (now the graph's record) and adds one to
  // the graph's store.
  REQUIRE(coll::cuda::launch(waitFlag, dim3(1), dim3(1), 0, t.s1, &flags.a) == cudaSuccess);
  REQUIRE(cudaEventRecord(t.fork, t.s1) == cudaSuccess);
  REQUIRE(cudaGraphLaunch(x, t.s2) == cudaSuccess);
  REQUIRE(cudaStreamWaitEvent(s3, t.fork, 0) == cudaSuccess);
  REQUIRE(coll::cuda::launch(addOne, dim3(1), dim3(1), 0, s3, static_cast<const int*>(h + 1), h + 2) == cudaSuccess);
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  flags.a = 1;
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  CHECK(h[2] == -1);  // s3 still waits for the graph, which waits for b
  flags.b = 1;
  REQUIRE(cudaDeviceSynchronize() == cudaSuccess);
  CHECK(h[0] == 1);  // the graph started after s1's record, so after a was set
  CHECK(h[1] == 1);
  CHECK(h[2] == 2);
  REQUIRE(cudaGraphExecDestroy(x) == cudaSuccess);
  REQUIRE(cudaGraphDestroy(g) == cudaSuccess);
  REQUIRE(cudaStreamDestroy(s3) == cudaSuccess);
  REQUIRE(cudaFreeHost(h) == cudaSuccess);
}

TEST_CASE("a capture refuses an unjoined fork, a wait across its boundary, a merge, an end elsewhere") {
  Streams t;
  int* d = nullptr;
  REQUIRE(cudaMalloc(&d, sizeof(int)) == cudaSuccess);
  cudaGraph_t g = nullptr;

  SECTION("a fork whose work is not joined back: no graph, and neither stream captures any more") {
    REQUIRE(cudaStreamBeginCapture(t.s1, cudaStreamCaptureModeThreadLocal) == cudaSuccess);
    REQUIRE(cudaEventRecord(t.fork, t.s1) == cudaSuccess);
    REQUIRE(cudaStreamWaitEvent(t.s2, t.fork, 0) == cudaSuccess);
    REQUIRE(cudaEventRecord(t.join, t.s2) == cudaSuccess);
    REQUIRE(cudaStreamWaitEvent(t.s1, t.join, 0) == cudaSuccess);
    REQUIRE(coll::cuda::launch(store, dim3(1), dim3(1), 0, t.s2, d, 1) == cudaSuccess);  // after the join
    CHECK(cudaStreamEndCapture(t.s1, &g) == cudaErrorStreamCaptureUnjoined);
    CHECK(g == nullptr);
    CHECK(captureStatus(t.s1) == cudaStreamCaptureStatusNone);
    CHECK(captureStatus(t.s2) == cudaStreamCaptureStatusNone);
  }
  SECTION("a capturing stream waiting on an event recorded outside the capture") {
    REQUIRE(cudaEventRecord(t.fork, t.s2) == cudaSuccess);
    REQUIRE(cudaStreamBeginCapture(t.s1, cudaStreamCaptureModeThreadLocal) == cudaSuccess);
    CHECK(cudaStreamWaitEvent(t.s1, t.fork, 0) == cudaErrorStreamCaptureIsolation);
    REQUIRE(cudaStreamEndCapture(t.s1, &g) == cudaSuccess);
    REQUIRE(cudaGraphDestroy(g) == cudaSuccess);
  }
  SECTION("a stream of one capture waiting on an event of another") {
    REQUIRE(cudaStreamBeginCapture(t.s1, cudaStreamCaptureModeThreadLocal) == cudaSuccess);
    REQUIRE(cudaStreamBeginCapture(t.s2, cudaStreamCaptureModeThreadLocal) == cudaSuccess);
    unsigned long long id1 = 0, id2 = 0;
    cudaStreamCaptureStatus st;
    REQUIRE(cudaStreamGetCaptureInfo(t.s1, &st, &id1) == cudaSuccess);
    REQUIRE(cudaStreamGetCaptureInfo(t.s2, &st, &id2) == cudaSuccess);
    CHECK(id1 != id2);
    REQUIRE(cudaEventRecord(t.fork, t.s1) == cudaSuccess);
    CHECK(cudaStreamWaitEvent(t.s2, t.fork, 0) == cudaErrorStreamCaptureMerge);
    for (cudaStream_t s : {t.s1, t.s2}) {
      REQUIRE(cudaStreamEndCapture(s, &g) == cudaSuccess);
      REQUIRE(cudaGraphDestroy(g) == cudaSuccess);
    }
  }
  SECTION("ending the capture on the stream that joined it, not the one that began it") {
    REQUIRE(cudaStreamBeginCapture(t.s1, cudaStreamCaptureModeThreadLocal) == cudaSuccess);
    REQUIRE(cudaEventRecord(t.fork, t.s1) == cudaSuccess);
    REQUIRE(cudaStreamWaitEvent(t.s2, t.fork, 0) == cudaSuccess);
    CHECK(cudaStreamEndCapture(t.s2, &g) == cudaErrorStreamCaptureUnmatched);
    REQUIRE(cudaEventRecord(t.join, t.s2) == cudaSuccess);
    REQUIRE(cudaStreamWaitEvent(t.s1, t.join, 0) == cudaSuccess);
    REQUIRE(cudaStreamEndCapture(t.s1, &g) == cudaSuccess);
    REQUIRE(cudaGraphDestroy(g) == cudaSuccess);
  }
  (void)cudaGetLastError();
  REQUIRE(cudaFree(d) == cudaSuccess);
}
