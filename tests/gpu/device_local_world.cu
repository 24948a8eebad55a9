// device_local_world.cu — the plumbing of coll_device_local_test: failure
// reporting, the World of N ranks in this process, the two ways of driving
// them (drive()), and the helpers the checks share (device_local_checks.h).
#include <cstdarg>
#include <cstring>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "device_local_checks.h"

namespace localtest {

void fail(const char* fmt, ...) {
  // Every failure counts; past this many only the summary says how many.
  constexpr long kPrinted = 500;
  static std::mutex printing;
  const long k = ++gFailed;
  if (k > kPrinted) return;
  std::lock_guard<std::mutex> lock(printing);
  std::va_list ap;
  va_start(ap, fmt);
  std::fputs("FAIL ", stderr);
  std::vfprintf(stderr, fmt, ap);
  std::fputc('\n', stderr);
  if (k == kPrinted) std::fputs("(further failures are counted, not printed)\n", stderr);
  va_end(ap);
}

void settleAll() {
  for (int d = 0; d < gDevices; ++d) {
    LOCAL_CUDA_OK(cudaSetDevice(d));
    LOCAL_CUDA_OK(cudaDeviceSynchronize());
  }
}

ScopedEnv::ScopedEnv(const char* name, const char* value) : name_(name) {
  if (const char* old = std::getenv(name)) {
    had_ = true;
    old_ = old;
  }
  setenv(name, value, 1);
}

ScopedEnv::~ScopedEnv() {
  if (had_) setenv(name_.c_str(), old_.c_str(), 1);
  else unsetenv(name_.c_str());
}

World::World(const char* timeout)
    : n(gRanks), comms(size_t(gRanks), nullptr), dev(size_t(gRanks)), streams(size_t(gRanks)) {
  {
    std::unique_ptr<ScopedEnv> env;
    if (timeout != nullptr) env = std::make_unique<ScopedEnv>("COLL_TIMEOUT", timeout);
    LOCAL_COLL_OK(nullptr, collCommInitAll(comms.data(), n, nullptr));
  }
  for (int r = 0; r < n; ++r) {
    dev[r] = r % gDevices;
    LOCAL_CUDA_OK(cudaSetDevice(dev[r]));
    LOCAL_CUDA_OK(cudaStreamCreateWithFlags(&streams[r], cudaStreamNonBlocking));
  }
}

World::~World() {
  syncStreams();
  destroyComms();
  for (int r = 0; r < n; ++r) {
    LOCAL_CUDA_OK(cudaSetDevice(dev[r]));
    LOCAL_CUDA_OK(cudaStreamDestroy(streams[r]));
  }
}

void World::syncStreams() {
  for (int r = 0; r < n; ++r) {
    LOCAL_CUDA_OK(cudaSetDevice(dev[r]));
    LOCAL_CUDA_OK(cudaStreamSynchronize(streams[r]));
  }
}

double World::destroyComms(collResult_t* first) {
  collResult_t worst = collSuccess;
  const auto t0 = std::chrono::steady_clock::now();
  for (collComm_t& c : comms) {
    if (c == nullptr) continue;
    const collResult_t r = collCommDestroy(c);
    if (r != collSuccess && worst == collSuccess) worst = r;
    c = nullptr;
  }
  if (first != nullptr) *first = worst;
  return secondsSince(t0);
}

std::vector<collResult_t> drive(World& w, Mode m, const std::function<collResult_t(int)>& issue) {
  std::vector<collResult_t> res(w.comms.size(), collSuccess);
  if (m == Mode::OneThread) {
    const collResult_t start = collGroupStart();
    if (start != collSuccess) return std::vector<collResult_t>(size_t(w.n), start);
    for (int r = 0; r < w.n; ++r) {
      LOCAL_CUDA_OK(cudaSetDevice(w.dev[r]));
      res[r] = issue(r);
    }
    const collResult_t end = collGroupEnd();
    for (collResult_t& r : res)
      if (r == collSuccess) r = end;
    return res;
  }
  std::vector<std::thread> threads;
  threads.reserve(size_t(w.n));
  for (int r = 0; r < w.n; ++r)
    threads.emplace_back([&, r] {
      LOCAL_CUDA_OK(cudaSetDevice(w.dev[r]));
      res[r] = issue(r);
    });
  for (std::thread& t : threads) t.join();
  return res;
}

bool allSucceeded(const World& w, const std::vector<collResult_t>& res, const std::string& what) {
  bool ok = true;
  for (int r = 0; r < w.n; ++r)
    if (res[r] != collSuccess) {
      ok = false;
      fail("%s: rank %d: %s: %s (this thread's last error: %s)", what.c_str(), r, collGetErrorString(res[r]),
           collGetLastError(w.comms[r]), collGetLastError(nullptr));
    }
  return ok;
}

// No communicator of w reports an asynchronous error after `what`.
bool noAsyncError(const World& w, const std::string& what) {
  bool ok = true;
  for (int r = 0; r < w.n; ++r) {
    collResult_t e = collSuccess;
    LOCAL_COLL_OK(w.comms[r], collCommGetAsyncError(w.comms[r], &e));
    if (e != collSuccess) {
      ok = false;
      fail("%s: rank %d: async error %s: %s", what.c_str(), r, collGetErrorString(e), collGetLastError(w.comms[r]));
    }
  }
  return ok;
}

void freeAll(const World& w, const std::vector<float*>& d) {
  for (int r = 0; r < w.n; ++r) {
    LOCAL_CUDA_OK(cudaSetDevice(w.dev[r]));
    LOCAL_CUDA_OK(cudaFree(d[r]));
  }
}

// An in-place float32 sum all-reduce of 7 elements on every rank, so that
// the communicators' device side is set up (collective, at their first
// device call) before a check that holds, captures or times its calls.
void warmUp(World& w, Mode m) {
  const size_t count = 7;
  std::vector<float*> d = rankFloats(w, count, [](int r, size_t) { return float(r); });
  settleAll();
  const auto res = drive(w, m, [&](int r) {
    return collAllReduce(d[r], d[r], count, collFloat32, collSum, w.comms[r], w.streams[r]);
  });
  allSucceeded(w, res, std::string("warm-up all-reduce (") + modeName(m) + ")");
  w.syncStreams();
  freeAll(w, d);
}

}  // namespace localtest
