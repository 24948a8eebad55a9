// device_local_checks.h — what the files of coll_device_local_test share:
// the communicator of N ranks in this process (World), the two ways of
// driving its ranks (Mode, drive()), failure reporting and shared helpers
// (device_local_world.cu), and the checks of device_local_checks.cu (send/recv, asynchrony, graphs, mismatched
// arguments, timeouts, destroy).  See device_local_test.cu.
#pragma once

#include <cuda_runtime.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <string>
#include <vector>

#include "coll.h"

namespace localtest {

// How the ranks' calls are made: one thread issues every rank's call inside
// one collGroupStart/collGroupEnd, or a thread per rank makes its own call
// ungrouped (send/recv: a group of its own).
enum class Mode { OneThread, Threads };
inline const char* modeName(Mode m) { return m == Mode::OneThread ? "one-thread" : "threads"; }

// The modes every check runs in (--mode narrows them to one).
inline std::vector<Mode> gModes = {Mode::OneThread, Mode::Threads};
inline int gRanks = 3;    // ranks per communicator
inline int gDevices = 1;  // devices in use: rank r on device r % gDevices
inline std::atomic<long> gFailed{0};

// A call that sets the test up: failing, the test cannot go on.
#define LOCAL_COLL_OK(comm, x)                                                                             \
  do {                                                                                                     \
    collResult_t r_ = (x);                                                                                 \
    if (r_ != collSuccess) {                                                                               \
      std::fprintf(stderr, "%s:%d: %s: %s: %s\n", __FILE__, __LINE__, #x, collGetErrorString(r_),          \
                   collGetLastError(comm));                                                                \
      std::exit(1);                                                                                        \
    }                                                                                                      \
  } while (0)

// A CUDA call the test needs: failing, it cannot go on.
#define LOCAL_CUDA_OK(x)                                                                                   \
  do {                                                                                                     \
    cudaError_t e_ = (x);                                                                                  \
    if (e_ != cudaSuccess) {                                                                               \
      std::fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #x, cudaGetErrorString(e_));              \
      std::exit(1);                                                                                        \
    }                                                                                                      \
  } while (0)

// Prints "FAIL <message>" (up to a limit, then only counts) and counts it.
void fail(const char* fmt, ...) __attribute__((format(printf, 1, 2)));

inline double secondsSince(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// Waits for every device in use: the setup copies (cudaMemcpy, cudaMemset)
// may still be in flight when they return, and the ranks' streams are
// non-blocking, so not ordered after them (device_test_common.h's
// settleSetup, for every device).
void settleAll();

// Sets an environment variable for a scope (the library reads COLL_TIMEOUT
// when a communicator is made), then restores it.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const char* value);
  ~ScopedEnv();
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;

 private:
  std::string name_, old_;
  bool had_ = false;
};

// N ranks of one communicator in this process (collCommInitAll), rank r on
// device r % gDevices with a non-blocking stream of its own.  `timeout`, if
// given, is COLL_TIMEOUT while the communicators are made.
class World {
 public:
  explicit World(const char* timeout = nullptr);
  ~World();  // waits for the streams, destroys what is left
  World(const World&) = delete;
  World& operator=(const World&) = delete;

  void syncStreams();
  // Destroys every communicator from this thread, in rank order; returns the
  // seconds it took and the first failure's result in *first.
  double destroyComms(collResult_t* first = nullptr);

  int n = 0;
  std::vector<collComm_t> comms;
  std::vector<int> dev;
  std::vector<cudaStream_t> streams;
};

// Runs issue(r) for every rank the way `m` says; each rank's result (one
// thread: the call's own failure, else collGroupEnd's result).  The calling
// thread's (and each rank thread's) current device is the rank's for its call.
std::vector<collResult_t> drive(World& w, Mode m, const std::function<collResult_t(int)>& issue);

// True when every result is collSuccess; otherwise prints each failing
// rank's result and message under `what`.
bool allSucceeded(const World& w, const std::vector<collResult_t>& res, const std::string& what);

// No communicator of w reports an asynchronous error after `what`.
bool noAsyncError(const World& w, const std::string& what);

// count floats on each rank's device, value(rank, i) uploaded (not settled).
template <class Value>
std::vector<float*> rankFloats(const World& w, size_t count, Value value) {
  std::vector<float*> d(w.comms.size(), nullptr);
  std::vector<float> h(count);
  for (int r = 0; r < w.n; ++r) {
    LOCAL_CUDA_OK(cudaSetDevice(w.dev[r]));
    LOCAL_CUDA_OK(cudaMalloc(&d[r], (count + 1) * sizeof(float)));
    for (size_t i = 0; i < count; ++i) h[i] = value(r, i);
    LOCAL_CUDA_OK(cudaMemcpy(d[r], h.data(), count * sizeof(float), cudaMemcpyHostToDevice));
  }
  return d;
}

void freeAll(const World& w, const std::vector<float*>& d);

// Counts a failure, naming `what`, the rank and the first wrong element,
// unless every rank's device floats d[r][0, count) equal want(r, i).
template <class Want>
bool expectRankFloats(const World& w, const std::string& what, const std::vector<float*>& d, size_t count,
                             Want want) {
  bool ok = true;
  std::vector<float> h(count);
  for (int r = 0; r < w.n; ++r) {
    LOCAL_CUDA_OK(cudaSetDevice(w.dev[r]));
    LOCAL_CUDA_OK(cudaMemcpy(h.data(), d[r], count * sizeof(float), cudaMemcpyDeviceToHost));
    size_t bad = 0, first = count;
    for (size_t i = 0; i < count; ++i)
      if (h[i] != want(r, i)) {
        if (bad++ == 0) first = i;
      }
    if (bad > 0) {
      ok = false;
      fail("%s: rank %d: %zu of %zu elements wrong, first [%zu] = %g, want %g", what.c_str(), r, bad, count, first,
           h[first], want(r, first));
    }
  }
  return ok;
}

// An in-place float32 sum all-reduce of 7 elements on every rank, so that
// the communicators' device side is set up (collective, at their first
// device call) before a check that holds, captures or times its calls.
void warmUp(World& w, Mode m);

// The checks of device_local_checks.cu; each failure is printed and counted.
void testSendRecv(World& w, Mode m);
void sendRecvRound(World& w, Mode m, size_t bytes, int round);
void testAsync(World& w, Mode m);
void testGraph(World& w, Mode m);
void checkDestroy(World& w, const char* what);
void testMismatch();
void testTimeout();

}  // namespace localtest
