// The emulated CUDA runtime itself (kernels/cuda/emulation, built with
// -DCOLL_CUDA_EMULATION=ON): the semantics the device path relies on, each
// checked so that a runtime that got it wrong fails here rather than
// somewhere in a collective.  Stream order and the legacy stream's ordering
// with blocking streams, a full stream's blocking enqueue, events, host
// functions, graph capture and replay,
// the copies' treatment of pageable memory, fresh memory's fill and guard
// pages, CUDA IPC into another process, pointer attributes, kernel launches.
#include "cuda_emulation.h"  // the built-ins, for the test kernel

#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <csignal>
#include <cstring>
#include <thread>
#include <vector>

#include "coll/kernel_launch.h"

extern "C" int cuPointerGetAttributes(unsigned n, int* attributes, void** data, unsigned long long ptr);

namespace {

// A host function that holds its stream until `release` is set.
struct Gate {
  std::atomic<bool> release{false};
  std::atomic<bool> reached{false};
  static void CUDART_CB hold(void* p) {
    auto* g = static_cast<Gate*>(p);
    g->reached = true;
    while (!g->release) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
};

struct Log {
  std::vector<int> order;
  std::atomic<int> next{0};
};
struct Mark {
  Log* log;
  int value;
};
void CUDART_CB mark(void* p) {
  auto* m = static_cast<Mark*>(p);
  m->log->order.push_back(m->value);  // one stream: no two marks of a log at once
}

__global__ void fillKernel(int* out, int n, int value) {
  for (int i = static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x); i < n;
       i += static_cast<int>(gridDim.x * blockDim.x))
    out[i] = value + i;
}

// Runs a grid as a launch runs it (runGrid), `blocks` blocks of 4 threads,
// in which every thread waits at a grid-wide barrier (as blocks of
// different grids wait for each other in the collectives), then writes its
// index: it completes only if all the grid's threads run at once.  A
// thread that waits 30 s gives up, and the grid fails.
bool gridMeets(unsigned blocks) {
  const unsigned total = blocks * 4;
  std::atomic<unsigned> arrived{0};
  std::atomic<bool> gaveUp{false};
  std::vector<int> out(total, -1);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  coll::emu::runGrid(blocks, 4, 0, [&] {
    arrived.fetch_add(1);
    while (arrived.load() < total) {
      if (std::chrono::steady_clock::now() > deadline) {
        gaveUp = true;
        return;
      }
      __nanosleep(1000);
    }
    const unsigned me = blockIdx.x * blockDim.x + threadIdx.x;
    out[me] = static_cast<int>(me);
  });
  for (unsigned i = 0; i < total; ++i)
    if (out[i] != static_cast<int>(i)) return false;
  return !gaveUp;
}

}  // namespace

TEST_CASE("work on one stream runs in order, after the call returns") {
  cudaStream_t s;
  REQUIRE(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking) == cudaSuccess);
  Gate gate;
  Log log;
  std::vector<Mark> marks;
  for (int i = 0; i < 5; ++i) marks.push_back({&log, i});
  REQUIRE(cudaLaunchHostFunc(s, Gate::hold, &gate) == cudaSuccess);
  for (Mark& m : marks) REQUIRE(cudaLaunchHostFunc(s, mark, &m) == cudaSuccess);
  REQUIRE(cudaStreamQuery(s) == cudaErrorNotReady);
  CHECK(log.order.empty());
  gate.release = true;
  REQUIRE(cudaStreamSynchronize(s) == cudaSuccess);
  CHECK(log.order == std::vector<int>{0, 1, 2, 3, 4});
  CHECK(cudaStreamQuery(s) == cudaSuccess);
  REQUIRE(cudaStreamDestroy(s) == cudaSuccess);
}

TEST_CASE("the legacy stream waits for blocking streams, not for non-blocking ones") {
  cudaStream_t blocking, nonBlocking;
  REQUIRE(cudaStreamCreate(&blocking) == cudaSuccess);
  REQUIRE(cudaStreamCreateWithFlags(&nonBlocking, cudaStreamNonBlocking) == cudaSuccess);
  Gate held;
  REQUIRE(cudaLaunchHostFunc(nonBlocking, Gate::hold, &held) == cudaSuccess);
  REQUIRE(cudaStreamSynchronize(nullptr) == cudaSuccess);  // does not wait for nonBlocking
  CHECK_FALSE(held.release);
  held.release = true;

  Gate gate;
  Log log;
  Mark first{&log, 1}, second{&log, 2};
  REQUIRE(cudaLaunchHostFunc(blocking, Gate::hold, &gate) == cudaSuccess);
  REQUIRE(cudaLaunchHostFunc(blocking, mark, &first) == cudaSuccess);
  REQUIRE(cudaLaunchHostFunc(nullptr, mark, &second) == cudaSuccess);  // after `first`
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  CHECK(log.order.empty());
  gate.release = true;
  REQUIRE(cudaDeviceSynchronize() == cudaSuccess);
  CHECK(log.order == std::vector<int>{1, 2});
  REQUIRE(cudaStreamDestroy(blocking) == cudaSuccess);
  REQUIRE(cudaStreamDestroy(nonBlocking) == cudaSuccess);
}

// Enqueues `n` operations of one kind on s from a thread of its own,
// counting those that returned; returns the count once it stopped growing.
template <class Enqueue>
int enqueuedBeforeBlocking(std::thread& t, std::atomic<int>& done, int n, Enqueue enqueue) {
  t = std::thread([&done, n, enqueue] {
    for (int i = 0; i < n; ++i) {
      enqueue();
      ++done;
    }
  });
  int seen = -1;
  while (seen != done.load()) {
    seen = done.load();
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  return seen;
}

TEST_CASE("a full stream blocks the enqueue until its work drains") {
  // 1021 slots (COLL_EMU_STREAM_DEPTH's default); a host function takes 15.
  cudaStream_t s;
  REQUIRE(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking) == cudaSuccess);
  void* d = nullptr;
  REQUIRE(cudaMalloc(&d, 64) == cudaSuccess);
  SECTION("kernels, copies and memsets take one slot") {
    Gate gate;
    REQUIRE(cudaLaunchHostFunc(s, Gate::hold, &gate) == cudaSuccess);
    std::atomic<int> done{0};
    std::thread t;
    const int before = enqueuedBeforeBlocking(t, done, 1021, [&] { (void)cudaMemsetAsync(d, 1, 64, s); });
    CHECK(before == 1021 - 15);
    gate.release = true;
    t.join();
    CHECK(done == 1021);
    CHECK(coll::emu::streamOpsQueued(s) == 1 + 1021);  // the gate's and the memsets
  }
  SECTION("host functions take 15") {
    Gate gate;
    REQUIRE(cudaLaunchHostFunc(s, Gate::hold, &gate) == cudaSuccess);
    std::atomic<int> done{0};
    std::thread t;
    const int before =
        enqueuedBeforeBlocking(t, done, 80, [&] { (void)cudaLaunchHostFunc(s, [](void*) {}, nullptr); });
    CHECK(before == (1021 - 15) / 15);
    gate.release = true;
    t.join();
    CHECK(done == 80);
    CHECK(coll::emu::streamOpsQueued(s) == 1 + 80);
  }
  REQUIRE(cudaStreamSynchronize(s) == cudaSuccess);
  REQUIRE(cudaFree(d) == cudaSuccess);
  REQUIRE(cudaStreamDestroy(s) == cudaSuccess);
}

TEST_CASE("events complete when their stream reaches them") {
  cudaStream_t s;
  REQUIRE(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking) == cudaSuccess);
  cudaEvent_t e;
  REQUIRE(cudaEventCreate(&e) == cudaSuccess);
  CHECK(cudaEventQuery(e) == cudaSuccess);  // never recorded
  Gate gate;
  REQUIRE(cudaLaunchHostFunc(s, Gate::hold, &gate) == cudaSuccess);
  REQUIRE(cudaEventRecord(e, s) == cudaSuccess);
  CHECK(cudaEventQuery(e) == cudaErrorNotReady);
  gate.release = true;
  REQUIRE(cudaEventSynchronize(e) == cudaSuccess);
  CHECK(cudaEventQuery(e) == cudaSuccess);
  REQUIRE(cudaEventDestroy(e) == cudaSuccess);
  REQUIRE(cudaStreamDestroy(s) == cudaSuccess);
}

TEST_CASE("captured work runs only when the graph is launched, once per launch") {
  cudaStream_t s;
  REQUIRE(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking) == cudaSuccess);
  int* d = nullptr;
  REQUIRE(cudaMalloc(&d, 64 * sizeof(int)) == cudaSuccess);
  Log log;
  Mark m{&log, 7};
  REQUIRE(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal) == cudaSuccess);
  cudaStreamCaptureStatus st;
  REQUIRE(cudaStreamIsCapturing(s, &st) == cudaSuccess);
  CHECK(st == cudaStreamCaptureStatusActive);
  REQUIRE(coll::cuda::launch(fillKernel, dim3(3), dim3(32), 0, s, d, 64, 100) == cudaSuccess);
  REQUIRE(cudaMemsetAsync(d, 0, sizeof(int), s) == cudaSuccess);
  REQUIRE(cudaLaunchHostFunc(s, mark, &m) == cudaSuccess);
  CHECK(cudaStreamSynchronize(s) == cudaErrorStreamCaptureUnsupported);
  (void)cudaGetLastError();
  cudaGraph_t g;
  REQUIRE(cudaStreamEndCapture(s, &g) == cudaSuccess);
  CHECK(log.order.empty());
  size_t n = 0;
  REQUIRE(cudaGraphGetNodes(g, nullptr, &n) == cudaSuccess);
  REQUIRE(n == 3);
  std::vector<cudaGraphNode_t> nodes(n);
  REQUIRE(cudaGraphGetNodes(g, nodes.data(), &n) == cudaSuccess);
  cudaGraphNodeType types[3];
  for (int i = 0; i < 3; ++i) REQUIRE(cudaGraphNodeGetType(nodes[i], &types[i]) == cudaSuccess);
  CHECK(types[0] == cudaGraphNodeTypeKernel);
  CHECK(types[1] == cudaGraphNodeTypeMemset);
  CHECK(types[2] == cudaGraphNodeTypeHost);
  cudaGraphExec_t x;
  REQUIRE(cudaGraphInstantiate(&x, g, 0) == cudaSuccess);
  REQUIRE(cudaGraphLaunch(x, s) == cudaSuccess);
  REQUIRE(cudaGraphLaunch(x, s) == cudaSuccess);
  REQUIRE(cudaStreamSynchronize(s) == cudaSuccess);
  CHECK(log.order == std::vector<int>{7, 7});
  std::vector<int> h(64);
  REQUIRE(cudaMemcpy(h.data(), d, 64 * sizeof(int), cudaMemcpyDeviceToHost) == cudaSuccess);
  CHECK(h[0] == 0);
  for (int i = 1; i < 64; ++i) CHECK(h[i] == 100 + i);
  REQUIRE(cudaGraphExecDestroy(x) == cudaSuccess);
  REQUIRE(cudaGraphDestroy(g) == cudaSuccess);
  REQUIRE(cudaFree(d) == cudaSuccess);
  REQUIRE(cudaStreamDestroy(s) == cudaSuccess);
}

TEST_CASE("copies read pageable memory before returning and land in it before returning") {
  cudaStream_t s;
  REQUIRE(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking) == cudaSuccess);
  int* d = nullptr;
  REQUIRE(cudaMalloc(&d, sizeof(int)) == cudaSuccess);
  Gate gate;
  REQUIRE(cudaLaunchHostFunc(s, Gate::hold, &gate) == cudaSuccess);
  int value = 11;
  REQUIRE(cudaMemcpyAsync(d, &value, sizeof value, cudaMemcpyHostToDevice, s) == cudaSuccess);
  value = 22;  // too late: the copy took 11
  gate.release = true;
  int back = 0;
  REQUIRE(cudaMemcpyAsync(&back, d, sizeof back, cudaMemcpyDeviceToHost, s) == cudaSuccess);
  CHECK(back == 11);  // pageable destination: landed before the call returned
  REQUIRE(cudaFree(d) == cudaSuccess);
  REQUIRE(cudaStreamDestroy(s) == cudaSuccess);
}

TEST_CASE("device memory: filled, guarded, known to the pointer attributes") {
  const size_t bytes = 1000;
  unsigned char* d = nullptr;
  REQUIRE(cudaMalloc(&d, bytes) == cudaSuccess);
  CHECK(reinterpret_cast<uintptr_t>(d) % 256 == 0);
  std::vector<unsigned char> h(bytes);
  REQUIRE(cudaMemcpy(h.data(), d, bytes, cudaMemcpyDeviceToHost) == cudaSuccess);
  CHECK(std::count(h.begin(), h.end(), 0xCD) == static_cast<long>(bytes));

  int attrs[2] = {2, 9};  // memory type, device ordinal
  unsigned type = 0;
  int ordinal = -2;
  void* data[2] = {&type, &ordinal};
  REQUIRE(cuPointerGetAttributes(2, attrs, data, reinterpret_cast<unsigned long long>(d + 10)) == 0);
  CHECK(type == 2u);
  CHECK(ordinal == 0);
  int local = 0;
  REQUIRE(cuPointerGetAttributes(2, attrs, data, reinterpret_cast<unsigned long long>(&local)) == 0);
  CHECK(type == 0u);

  // Past the end of the allocation's last 256-byte unit: a fault.
  const pid_t pid = fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    signal(SIGSEGV, SIG_DFL);
    volatile unsigned char* p = d;
    p[bytes + 256] = 1;
    _exit(0);
  }
  int status = 0;
  REQUIRE(waitpid(pid, &status, 0) == pid);
  CHECK_FALSE((WIFEXITED(status) && WEXITSTATUS(status) == 0));  // killed, or ASan's report and exit
  REQUIRE(cudaFree(d) == cudaSuccess);
  CHECK(cudaFree(d) == cudaErrorInvalidValue);  // not any more
  (void)cudaGetLastError();
}

TEST_CASE("CUDA IPC: another process maps the allocation and writes to it") {
  int* d = nullptr;
  REQUIRE(cudaMalloc(&d, 4096) == cudaSuccess);
  REQUIRE(cudaMemset(d, 0, 4096) == cudaSuccess);
  cudaIpcMemHandle_t h;
  REQUIRE(cudaIpcGetMemHandle(&h, d) == cudaSuccess);
  void* same = nullptr;
  CHECK(cudaIpcOpenMemHandle(&same, h, cudaIpcMemLazyEnablePeerAccess) != cudaSuccess);  // not in this process
  (void)cudaGetLastError();
  const pid_t pid = fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    void* mapped = nullptr;
    if (cudaIpcOpenMemHandle(&mapped, h, cudaIpcMemLazyEnablePeerAccess) != cudaSuccess) _exit(2);
    static_cast<int*>(mapped)[1000] = 4242;
    _exit(cudaIpcCloseMemHandle(mapped) == cudaSuccess ? 0 : 3);
  }
  int status = 0;
  REQUIRE(waitpid(pid, &status, 0) == pid);
  REQUIRE(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 0);
  int v = 0;
  REQUIRE(cudaMemcpy(&v, d + 1000, sizeof v, cudaMemcpyDeviceToHost) == cudaSuccess);
  CHECK(v == 4242);
  REQUIRE(cudaFree(d) == cudaSuccess);
}

// The grid's host threads are kept for the next launch (grid_threads.h;
// under TSan each launch starts its own): each launch still gets all its
// threads at once, however many the last one had, and a child forked after
// launches (ranks as processes) gets threads of its own.
TEST_CASE("a grid's threads run at once, launch after launch, and in a forked child") {
  for (unsigned blocks : {4u, 16u, 2u, 16u}) {
    INFO("blocks " << blocks);
    CHECK(gridMeets(blocks));
  }
#if !defined(COLL_EMU_FRESH_GRID_THREADS)  // TSan stops a forked child that starts threads
  const pid_t pid = fork();
  REQUIRE(pid >= 0);
  if (pid == 0) _exit(gridMeets(8) && gridMeets(16) ? 0 : 1);
  // A child handing its grid to the parent's threads would hang: 60 s.
  int status = 0;
  pid_t got = 0;
  for (int i = 0; i < 600 && (got = waitpid(pid, &status, WNOHANG)) == 0; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  if (got == 0) {
    kill(pid, SIGKILL);
    waitpid(pid, &status, 0);
  }
  REQUIRE(got == pid);
  REQUIRE(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 0);
#endif
  CHECK(gridMeets(16));  // the parent's kept threads still serve it
}
