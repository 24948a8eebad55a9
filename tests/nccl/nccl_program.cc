// nccl_program.cc — a program written against NCCL's API and nothing else
// (nccl.h, and the CUDA runtime where there is one), run on libcoll's
// libnccl.so.2: what an unmodified NCCL user does, checked result by result.
//
//   nccl_program procs N    ranks as processes (fork; the id through pipes)
//   nccl_program threads N  ranks as threads, one communicator each
//   nccl_program group N    one thread: the ranks' inits and calls inside
//                           ncclGroupStart/End, then ncclCommInitAll
//   nccl_program abort N    ranks as threads; rank 0 blocks in an
//                           all-reduce its peers never join (host buffers),
//                           another thread aborts its communicator
//
// Buffers are device memory (cudaMalloc, a stream per rank) where a CUDA
// device is, else host memory (which libcoll also takes).  Every failure is
// printed with the rank, line, result and ncclGetLastError; the exit status
// is the number of failures (capped), 0 when all passed.
#include <nccl.h>

#include <dlfcn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#ifndef NCCL_PROGRAM_NO_CUDA
#include <cuda_runtime.h>
#endif

namespace {

std::atomic<int> failures{0};

void report(int rank, int line, const std::string& what) {
  failures++;
  std::fprintf(stderr, "rank %d: nccl_program.cc:%d: %s\n", rank, line, what.c_str());
}

#define EXPECT_RESULT(rank, comm, cmd, want)                                                                     \
  do {                                                                                                           \
    ncclResult_t r_ = (cmd);                                                                                     \
    if (r_ != (want))                                                                                            \
      report(rank, __LINE__,                                                                                     \
             std::string(#cmd) + " -> " + ncclGetErrorString(r_) + " (" + std::to_string(r_) + "), wanted " +    \
                 std::to_string(want) + "; last error: " + ncclGetLastError(comm));                              \
  } while (0)
#define OK(rank, comm, cmd) EXPECT_RESULT(rank, comm, cmd, ncclSuccess)
#define CHECK(rank, cond, msg)                                         \
  do {                                                                 \
    if (!(cond)) report(rank, __LINE__, std::string(#cond) + ": " + (msg)); \
  } while (0)

// ---- memory: device where there is one, else host ----
bool useDevice() {
#ifndef NCCL_PROGRAM_NO_CUDA
  if (std::getenv("NCCL_PROGRAM_HOST") != nullptr) return false;
  int n = 0;
  if (cudaGetDeviceCount(&n) != cudaSuccess) {
    (void)cudaGetLastError();
    return false;
  }
  return n > 0;
#else
  return false;
#endif
}

struct Rank {
  int rank = 0, nranks = 0;
  bool device = false;
  cudaStream_t stream = nullptr;
  ncclComm_t comm = nullptr;

  void select() {
#ifndef NCCL_PROGRAM_NO_CUDA
    if (!device) return;
    int n = 1;
    cudaGetDeviceCount(&n);
    cudaSetDevice(rank % n);
#endif
  }
  void makeStream() {
#ifndef NCCL_PROGRAM_NO_CUDA
    if (device) cudaStreamCreate(&stream);
#endif
  }
  void* alloc(size_t bytes) {
#ifndef NCCL_PROGRAM_NO_CUDA
    if (device) {
      void* p = nullptr;
      if (cudaMalloc(&p, bytes ? bytes : 1) != cudaSuccess) report(rank, __LINE__, "cudaMalloc failed");
      return p;
    }
#endif
    return std::calloc(bytes ? bytes : 1, 1);
  }
  void release(void* p) {
#ifndef NCCL_PROGRAM_NO_CUDA
    if (device) {
      cudaFree(p);
      return;
    }
#endif
    std::free(p);
  }
  void put(void* dst, const void* src, size_t bytes) {
#ifndef NCCL_PROGRAM_NO_CUDA
    if (device) {
      cudaMemcpy(dst, src, bytes, cudaMemcpyHostToDevice);
      return;
    }
#endif
    std::memcpy(dst, src, bytes);
  }
  // After the stream's work: the result as the host sees it.
  void get(void* dst, const void* src, size_t bytes) {
#ifndef NCCL_PROGRAM_NO_CUDA
    if (device) {
      if (cudaStreamSynchronize(stream) != cudaSuccess) report(rank, __LINE__, "cudaStreamSynchronize failed");
      cudaMemcpy(dst, src, bytes, cudaMemcpyDeviceToHost);
      return;
    }
#endif
    std::memcpy(dst, src, bytes);
  }
  void sync() {
#ifndef NCCL_PROGRAM_NO_CUDA
    if (device) cudaStreamSynchronize(stream);
#endif
  }
};

// A typed buffer pair (host copy + the rank's memory).
template <typename T>
struct Buf {
  Rank& r;
  std::vector<T> host;
  void* mem;
  Buf(Rank& rk, size_t n) : r(rk), host(n), mem(rk.alloc(n * sizeof(T))) {}
  ~Buf() { r.release(mem); }
  void upload() { r.put(mem, host.data(), host.size() * sizeof(T)); }
  std::vector<T>& download() {
    r.get(host.data(), mem, host.size() * sizeof(T));
    return host;
  }
};

// ---- element codecs, exact for the small integers used here ----
size_t elemBytes(ncclDataType_t t) {
  switch (t) {
    case ncclInt8: case ncclUint8: case ncclFloat8e4m3: case ncclFloat8e5m2: return 1;
    case ncclFloat16: case ncclBfloat16: return 2;
    case ncclInt32: case ncclUint32: case ncclFloat32: return 4;
    default: return 8;
  }
}

uint16_t halfBits(float f) {  // a normal float with at most 11 significant bits
  uint32_t b;
  std::memcpy(&b, &f, 4);
  if (f == 0) return 0;
  uint32_t exp = ((b >> 23) & 0xff) - 127 + 15;
  return static_cast<uint16_t>(((b >> 16) & 0x8000) | (exp << 10) | ((b >> 13) & 0x3ff));
}
float halfValue(uint16_t h) {
  if ((h & 0x7fff) == 0) return 0;
  uint32_t b = ((h & 0x8000u) << 16) | ((((h >> 10) & 0x1f) - 15 + 127) << 23) | ((h & 0x3ffu) << 13);
  float f;
  std::memcpy(&f, &b, 4);
  return f;
}

void encode(ncclDataType_t t, double v, void* out) {
  switch (t) {
    case ncclInt8: *static_cast<int8_t*>(out) = static_cast<int8_t>(v); break;
    case ncclUint8: *static_cast<uint8_t*>(out) = static_cast<uint8_t>(v); break;
    case ncclInt32: *static_cast<int32_t*>(out) = static_cast<int32_t>(v); break;
    case ncclUint32: *static_cast<uint32_t*>(out) = static_cast<uint32_t>(v); break;
    case ncclInt64: *static_cast<int64_t*>(out) = static_cast<int64_t>(v); break;
    case ncclUint64: *static_cast<uint64_t*>(out) = static_cast<uint64_t>(v); break;
    case ncclFloat32: *static_cast<float*>(out) = static_cast<float>(v); break;
    case ncclFloat64: *static_cast<double*>(out) = v; break;
    case ncclFloat16: {
      uint16_t h = halfBits(static_cast<float>(v));
      std::memcpy(out, &h, 2);
      break;
    }
    case ncclBfloat16: {
      float f = static_cast<float>(v);
      uint32_t b;
      std::memcpy(&b, &f, 4);
      uint16_t h = static_cast<uint16_t>(b >> 16);
      std::memcpy(out, &h, 2);
      break;
    }
    default: break;
  }
}

double decode(ncclDataType_t t, const void* in) {
  switch (t) {
    case ncclInt8: return *static_cast<const int8_t*>(in);
    case ncclUint8: return *static_cast<const uint8_t*>(in);
    case ncclInt32: return *static_cast<const int32_t*>(in);
    case ncclUint32: return *static_cast<const uint32_t*>(in);
    case ncclInt64: return static_cast<double>(*static_cast<const int64_t*>(in));
    case ncclUint64: return static_cast<double>(*static_cast<const uint64_t*>(in));
    case ncclFloat32: return *static_cast<const float*>(in);
    case ncclFloat64: return *static_cast<const double*>(in);
    case ncclFloat16: {
      uint16_t h;
      std::memcpy(&h, in, 2);
      return halfValue(h);
    }
    case ncclBfloat16: {
      uint16_t h;
      std::memcpy(&h, in, 2);
      uint32_t b = static_cast<uint32_t>(h) << 16;
      float f;
      std::memcpy(&f, &b, 4);
      return f;
    }
    default: return NAN;
  }
}

double value(int rank, size_t i) { return 1 + static_cast<double>((static_cast<size_t>(rank) + i) % 3); }

// ---- the checks one rank runs ----
void checkAllReduces(Rank& R) {
  const ncclDataType_t types[] = {ncclInt8,  ncclUint8,   ncclInt32,   ncclUint32,  ncclInt64,
                                  ncclUint64, ncclFloat16, ncclFloat32, ncclFloat64, ncclBfloat16};
  const ncclRedOp_t ops[] = {ncclSum, ncclProd, ncclMax, ncclMin, ncclAvg};
  const size_t count = 37;
  for (ncclDataType_t t : types) {
    for (ncclRedOp_t op : ops) {
      bool isFloat = t == ncclFloat16 || t == ncclFloat32 || t == ncclFloat64 || t == ncclBfloat16;
      if (op == ncclAvg && !isFloat) continue;
      const size_t eb = elemBytes(t);
      std::vector<unsigned char> in(count * eb), out(count * eb);
      for (size_t i = 0; i < count; i++) encode(t, value(R.rank, i), in.data() + i * eb);
      void* send = R.alloc(in.size());
      void* recv = R.alloc(out.size());
      R.put(send, in.data(), in.size());
      OK(R.rank, R.comm, ncclAllReduce(send, recv, count, t, op, R.comm, R.stream));
      R.get(out.data(), recv, out.size());
      for (size_t i = 0; i < count; i++) {
        double want = op == ncclProd ? 1 : op == ncclMax ? -1e300 : op == ncclMin ? 1e300 : 0;
        for (int q = 0; q < R.nranks; q++) {
          double v = value(q, i);
          want = op == ncclProd ? want * v : op == ncclMax ? std::max(want, v) : op == ncclMin ? std::min(want, v) : want + v;
        }
        if (op == ncclAvg) want /= R.nranks;
        double got = decode(t, out.data() + i * eb);
        double tol = op == ncclAvg ? 0.02 * want : 0;  // avg of fp16/bf16 rounds
        if (std::fabs(got - want) > tol) {
          report(R.rank, __LINE__, "all-reduce dtype " + std::to_string(t) + " op " + std::to_string(op) + " element " +
                                       std::to_string(i) + ": " + std::to_string(got) + " != " + std::to_string(want));
          break;
        }
      }
      R.release(send);
      R.release(recv);
    }
  }
  // A pre-multiplied sum with a host scalar: 2 x the sum.
  float two = 2.0f;
  ncclRedOp_t premul;
  OK(R.rank, R.comm, ncclRedOpCreatePreMulSum(&premul, &two, ncclFloat32, ncclScalarHostImmediate, R.comm));
  CHECK(R.rank, premul >= ncclNumOps, "a created op is past the built-in ones");
  Buf<float> a(R, 16), b(R, 16);
  for (size_t i = 0; i < 16; i++) a.host[i] = static_cast<float>(value(R.rank, i));
  a.upload();
  OK(R.rank, R.comm, ncclAllReduce(a.mem, b.mem, 16, ncclFloat32, premul, R.comm, R.stream));
  auto& got = b.download();
  for (size_t i = 0; i < 16; i++) {
    double want = 0;
    for (int q = 0; q < R.nranks; q++) want += 2 * value(q, i);
    CHECK(R.rank, got[i] == want, "pre-multiplied sum, element " + std::to_string(i));
  }
  OK(R.rank, R.comm, ncclRedOpDestroy(premul, R.comm));
}

void checkDataMovement(Rank& R) {
  const int n = R.nranks, me = R.rank;
  {  // all-gather
    Buf<int32_t> s(R, 5), r(R, 5 * n);
    for (int i = 0; i < 5; i++) s.host[i] = me * 100 + i;
    s.upload();
    OK(me, R.comm, ncclAllGather(s.mem, r.mem, 5, ncclInt32, R.comm, R.stream));
    auto& g = r.download();
    for (int p = 0; p < n; p++)
      for (int i = 0; i < 5; i++) CHECK(me, g[p * 5 + i] == p * 100 + i, "all-gather block " + std::to_string(p));
  }
  {  // broadcast out of place from the last rank, then ncclBcast in place from rank 0
    Buf<float> s(R, 9), r(R, 9);
    for (int i = 0; i < 9; i++) s.host[i] = static_cast<float>(me * 10 + i);
    s.upload();
    OK(me, R.comm, ncclBroadcast(s.mem, r.mem, 9, ncclFloat32, n - 1, R.comm, R.stream));
    auto& g = r.download();
    for (int i = 0; i < 9; i++) CHECK(me, g[i] == static_cast<float>((n - 1) * 10 + i), "broadcast");
    OK(me, R.comm, ncclBcast(s.mem, 9, ncclFloat32, 0, R.comm, R.stream));
    auto& h = s.download();
    for (int i = 0; i < 9; i++) CHECK(me, h[i] == static_cast<float>(i), "bcast in place");
  }
  {  // reduce to the middle rank
    const int root = n / 2;
    Buf<int64_t> s(R, 6), r(R, 6);
    for (int i = 0; i < 6; i++) s.host[i] = me + i;
    s.upload();
    OK(me, R.comm, ncclReduce(s.mem, r.mem, 6, ncclInt64, ncclSum, root, R.comm, R.stream));
    auto& g = r.download();
    if (me == root)
      for (int i = 0; i < 6; i++) CHECK(me, g[i] == static_cast<int64_t>(n) * i + n * (n - 1) / 2, "reduce");
  }
  {  // reduce-scatter
    Buf<int32_t> s(R, 4 * n), r(R, 4);
    for (int p = 0; p < n; p++)
      for (int i = 0; i < 4; i++) s.host[p * 4 + i] = me * 10 + p + i;
    s.upload();
    OK(me, R.comm, ncclReduceScatter(s.mem, r.mem, 4, ncclInt32, ncclSum, R.comm, R.stream));
    auto& g = r.download();
    for (int i = 0; i < 4; i++) CHECK(me, g[i] == 10 * n * (n - 1) / 2 + n * (me + i), "reduce-scatter");
  }
  {  // a ring of send/recv in a group
    Buf<int32_t> s(R, 7), r(R, 7);
    for (int i = 0; i < 7; i++) s.host[i] = me * 1000 + i;
    s.upload();
    OK(me, R.comm, ncclGroupStart());
    OK(me, R.comm, ncclSend(s.mem, 7, ncclInt32, (me + 1) % n, R.comm, R.stream));
    OK(me, R.comm, ncclRecv(r.mem, 7, ncclInt32, (me + n - 1) % n, R.comm, R.stream));
    OK(me, R.comm, ncclGroupEnd());
    auto& g = r.download();
    for (int i = 0; i < 7; i++) CHECK(me, g[i] == ((me + n - 1) % n) * 1000 + i, "send/recv ring");
  }
  {  // all-to-all
    Buf<int32_t> s(R, 3 * n), r(R, 3 * n);
    for (int p = 0; p < n; p++)
      for (int i = 0; i < 3; i++) s.host[p * 3 + i] = me * 100 + p * 10 + i;
    s.upload();
    OK(me, R.comm, ncclAlltoAll(s.mem, r.mem, 3, ncclInt32, R.comm, R.stream));
    auto& g = r.download();
    for (int p = 0; p < n; p++)
      for (int i = 0; i < 3; i++) CHECK(me, g[p * 3 + i] == p * 100 + me * 10 + i, "all-to-all block " + std::to_string(p));
  }
  {  // gather to 0, scatter from the last rank
    Buf<int32_t> s(R, 2), r(R, 2 * n);
    s.host = {me, -me};
    s.upload();
    OK(me, R.comm, ncclGather(s.mem, r.mem, 2, ncclInt32, 0, R.comm, R.stream));
    auto& g = r.download();
    if (me == 0)
      for (int p = 0; p < n; p++) CHECK(me, g[2 * p] == p && g[2 * p + 1] == -p, "gather block " + std::to_string(p));
    Buf<int32_t> all(R, 2 * n), mine(R, 2);
    for (int p = 0; p < n; p++) all.host[2 * p] = all.host[2 * p + 1] = (me + 1) * 1000 + p;
    all.upload();
    OK(me, R.comm, ncclScatter(all.mem, mine.mem, 2, ncclInt32, n - 1, R.comm, R.stream));
    auto& m = mine.download();
    CHECK(me, m[0] == n * 1000 + me && m[1] == n * 1000 + me, "scatter");
  }
}

void checkSplit(Rank& R) {
  const int n = R.nranks, me = R.rank;
  ncclComm_t sub = nullptr;
  // Same parity together, in descending parent rank (key -rank).
  OK(me, R.comm, ncclCommSplit(R.comm, me % 2, -me, &sub, nullptr));
  int subN = 0, subRank = -1, want = 0, wantRank = 0;
  for (int q = me % 2; q < n; q += 2) {
    want += q;
    if (q > me) wantRank++;
  }
  OK(me, sub, ncclCommCount(sub, &subN));
  OK(me, sub, ncclCommUserRank(sub, &subRank));
  CHECK(me, subN == (n - me % 2 + 1) / 2, "split size " + std::to_string(subN));
  CHECK(me, subRank == wantRank, "split rank " + std::to_string(subRank));
  Buf<int32_t> s(R, 1), r(R, 1);
  s.host[0] = me;
  s.upload();
  OK(me, sub, ncclAllReduce(s.mem, r.mem, 1, ncclInt32, ncclSum, sub, R.stream));
  CHECK(me, r.download()[0] == want, "all-reduce on the split communicator");
  OK(me, sub, ncclCommDestroy(sub));
  // Rank 0 in no new communicator.
  ncclComm_t rest = reinterpret_cast<ncclComm_t>(&sub);
  OK(me, R.comm, ncclCommSplit(R.comm, me == 0 ? NCCL_SPLIT_NOCOLOR : 0, 0, &rest, nullptr));
  if (me == 0) {
    CHECK(me, rest == nullptr, "NCCL_SPLIT_NOCOLOR gives no communicator");
  } else {
    OK(me, rest, ncclCommCount(rest, &subN));
    CHECK(me, subN == n - 1, "split without rank 0");
    OK(me, rest, ncclCommDestroy(rest));
  }
}

void checkQueriesAndErrors(Rank& R) {
  const int me = R.rank;
  int v = 0, count = 0, rank = -1, dev = -1;
  OK(me, R.comm, ncclGetVersion(&v));
  CHECK(me, v == NCCL_VERSION_CODE, "version " + std::to_string(v));
  OK(me, R.comm, ncclCommCount(R.comm, &count));
  OK(me, R.comm, ncclCommUserRank(R.comm, &rank));
  CHECK(me, count == R.nranks && rank == me, "count/rank");
  if (R.device) {
    int cur = -1;
#ifndef NCCL_PROGRAM_NO_CUDA
    cudaGetDevice(&cur);
#endif
    OK(me, R.comm, ncclCommCuDevice(R.comm, &dev));
    CHECK(me, dev == cur, "device " + std::to_string(dev) + " != current " + std::to_string(cur));
  } else {
    EXPECT_RESULT(me, R.comm, ncclCommCuDevice(R.comm, &dev), ncclInvalidUsage);
  }
  ncclResult_t async = ncclInternalError;
  OK(me, R.comm, ncclCommGetAsyncError(R.comm, &async));
  CHECK(me, async == ncclSuccess, "async error " + std::to_string(async));
  // Registration.
  Buf<float> b(R, 1024);
  void* h = nullptr;
  OK(me, R.comm, ncclCommRegister(R.comm, b.mem, 4096, &h));
  OK(me, R.comm, ncclCommDeregister(R.comm, h));
  EXPECT_RESULT(me, R.comm, ncclCommDeregister(R.comm, h), ncclInvalidArgument);
  ncclWindow_t w = nullptr;
  OK(me, R.comm, ncclCommWindowRegister(R.comm, b.mem, 4096, &w, NCCL_WIN_DEFAULT));
  OK(me, R.comm, ncclCommWindowDeregister(R.comm, w));
  // Errors, each with a message.
  EXPECT_RESULT(me, R.comm,
                ncclAllReduce(b.mem, b.mem, 4, static_cast<ncclDataType_t>(99), ncclSum, R.comm, R.stream),
                ncclInvalidArgument);
  CHECK(me, std::strstr(ncclGetLastError(R.comm), "99") != nullptr,
        std::string("the message names the bad dtype: ") + ncclGetLastError(R.comm));
  EXPECT_RESULT(me, R.comm, ncclBroadcast(b.mem, b.mem, 4, ncclFloat32, R.nranks, R.comm, R.stream),
                ncclInvalidArgument);
  ncclComm_t shrunk = nullptr;
  EXPECT_RESULT(me, R.comm, ncclCommShrink(R.comm, &rank, 1, &shrunk, nullptr, NCCL_SHRINK_DEFAULT), ncclInvalidUsage);
  EXPECT_RESULT(me, nullptr, ncclGroupEnd(), ncclInvalidUsage);
  CHECK(me, std::strlen(ncclGetLastError(nullptr)) > 0, "ncclGroupEnd's message");
  EXPECT_RESULT(me, nullptr, ncclCommCount(reinterpret_cast<ncclComm_t>(&b), &count), ncclInvalidArgument);
  OK(me, nullptr, ncclCommDestroy(nullptr));
  ncclConfig_t bad = NCCL_CONFIG_INITIALIZER;
  bad.magic = 0;
  ncclComm_t never = nullptr;
  ncclUniqueId id{};
  EXPECT_RESULT(me, nullptr, ncclCommInitRankConfig(&never, 2, id, 0, &bad), ncclInvalidArgument);
  CHECK(me, std::strstr(ncclGetLastError(nullptr), "NCCL_CONFIG_INITIALIZER") != nullptr, ncclGetLastError(nullptr));
}

// Everything one rank checks on its communicator, then finalize and destroy.
void runRank(Rank& R) {
  checkQueriesAndErrors(R);
  checkAllReduces(R);
  checkDataMovement(R);
  checkSplit(R);
  OK(R.rank, R.comm, ncclCommFinalize(R.comm));
  Buf<float> b(R, 4);
  EXPECT_RESULT(R.rank, R.comm, ncclAllReduce(b.mem, b.mem, 4, ncclFloat32, ncclSum, R.comm, R.stream),
                ncclInvalidUsage);
  OK(R.rank, R.comm, ncclCommDestroy(R.comm));
}

ncclComm_t initRank(Rank& R, const ncclUniqueId& id) {
  ncclConfig_t cfg = NCCL_CONFIG_INITIALIZER;
  std::string name = "nccl_program rank " + std::to_string(R.rank);
  cfg.commName = name.c_str();
  cfg.blocking = 1;
  OK(R.rank, nullptr, ncclCommInitRankConfig(&R.comm, R.nranks, id, R.rank, &cfg));
  return R.comm;
}

// Each process asks for a device after the fork: a CUDA runtime set up
// before a fork is not usable in the child.
int runProcs(int n, bool* device) {
  std::vector<int> writeEnds;
  std::vector<pid_t> kids;
  for (int r = 1; r < n; r++) {
    int fds[2];
    if (pipe(fds) != 0) return 100;
    pid_t pid = fork();
    if (pid == 0) {
      close(fds[1]);
      ncclUniqueId id;
      if (read(fds[0], &id, sizeof id) != static_cast<ssize_t>(sizeof id)) _exit(101);
      Rank R{r, n, useDevice()};
      R.select();
      R.makeStream();
      if (initRank(R, id)) runRank(R);
      _exit(std::min(failures.load(), 100));
    }
    close(fds[0]);
    writeEnds.push_back(fds[1]);
    kids.push_back(pid);
  }
  *device = useDevice();
  Rank R{0, n, *device};
  R.select();
  ncclUniqueId id;
  OK(0, nullptr, ncclGetUniqueId(&id));
  for (int fd : writeEnds) {
    if (write(fd, &id, sizeof id) != static_cast<ssize_t>(sizeof id)) report(0, __LINE__, "write to a child");
    close(fd);
  }
  R.makeStream();
  if (initRank(R, id)) runRank(R);
  int total = failures.load();
  for (pid_t k : kids) {
    int st = 0;
    waitpid(k, &st, 0);
    int code = WIFEXITED(st) ? WEXITSTATUS(st) : 100;
    if (code != 0) std::fprintf(stderr, "child %d exited with %d (its failures)\n", static_cast<int>(k), code);
    total += code;
  }
  return total;
}

int runThreads(int n, bool device) {
  ncclUniqueId id;
  OK(0, nullptr, ncclGetUniqueId(&id));
  std::vector<std::thread> ts;
  for (int r = 0; r < n; r++)
    ts.emplace_back([=] {
      Rank R{r, n, device};
      R.select();
      R.makeStream();
      if (initRank(R, id)) runRank(R);
    });
  for (auto& t : ts) t.join();
  return failures.load();
}

// One thread drives every rank: inits in a group, calls in groups.
int runGroup(int n, bool device) {
  std::vector<Rank> R(n);
  ncclUniqueId id;
  OK(0, nullptr, ncclGetUniqueId(&id));
  OK(0, nullptr, ncclGroupStart());
  for (int r = 0; r < n; r++) {
    R[r] = Rank{r, n, device};
    R[r].select();
    R[r].makeStream();
    OK(r, nullptr, ncclCommInitRank(&R[r].comm, n, id, r));
  }
  // Before ncclGroupEnd the handles exist, their communicators not yet.
  int count = 0;
  EXPECT_RESULT(0, R[0].comm, ncclCommCount(R[0].comm, &count), ncclInvalidUsage);
  OK(0, nullptr, ncclGroupEnd());
  auto allReduceAll = [&](std::vector<ncclComm_t> comms, const char* what) {
    std::vector<Buf<int32_t>*> bufs;
    OK(0, nullptr, ncclGroupStart());
    for (int r = 0; r < n; r++) {
      if (comms[r] == nullptr) {
        bufs.push_back(nullptr);
        continue;
      }
      R[r].select();
      auto* b = new Buf<int32_t>(R[r], 3);
      b->host = {r, 1, 2 * r};
      b->upload();
      bufs.push_back(b);
      OK(r, comms[r], ncclAllReduce(b->mem, b->mem, 3, ncclInt32, ncclSum, comms[r], R[r].stream));
    }
    OK(0, nullptr, ncclGroupEnd());
    int members = 0, sum = 0;
    for (int r = 0; r < n; r++)
      if (comms[r] != nullptr) members++, sum += r;
    for (int r = 0; r < n; r++) {
      if (bufs[r] == nullptr) continue;
      auto& g = bufs[r]->download();
      CHECK(r, g[0] == sum && g[1] == members && g[2] == 2 * sum, what);
      delete bufs[r];
    }
  };
  std::vector<ncclComm_t> comms(n);
  for (int r = 0; r < n; r++) comms[r] = R[r].comm;
  allReduceAll(comms, "grouped all-reduce");
  // A split in a group: odd ranks only.
  std::vector<ncclComm_t> odd(n, nullptr);
  OK(0, nullptr, ncclGroupStart());
  for (int r = 0; r < n; r++) OK(r, comms[r], ncclCommSplit(comms[r], r % 2 ? 1 : NCCL_SPLIT_NOCOLOR, r, &odd[r], nullptr));
  OK(0, nullptr, ncclGroupEnd());
  for (int r = 0; r < n; r++) CHECK(r, (odd[r] != nullptr) == (r % 2 == 1), "split in a group");
  allReduceAll(odd, "all-reduce on the odd ranks' split");
  for (int r = 0; r < n; r++) OK(r, odd[r], ncclCommDestroy(odd[r]));
  for (int r = 0; r < n; r++) OK(r, comms[r], ncclCommDestroy(comms[r]));
  // ncclCommInitAll: rank i on devlist[i].
  std::vector<int> devs(n, 0);
  OK(0, nullptr, ncclCommInitAll(comms.data(), n, devs.data()));
  for (int r = 0; r < n; r++) {
    int d = -1, rank = -1;
    OK(r, comms[r], ncclCommCuDevice(comms[r], &d));
    OK(r, comms[r], ncclCommUserRank(comms[r], &rank));
    CHECK(r, d == 0 && rank == r, "ncclCommInitAll's device and rank");
  }
  allReduceAll(comms, "all-reduce after ncclCommInitAll");
  for (int r = 0; r < n; r++) OK(r, comms[r], ncclCommDestroy(comms[r]));
  return failures.load();
}

// ncclCommAbort from another thread while rank 0 is inside a call that
// cannot finish: the call returns an error, the abort frees the
// communicator once it has, and the peers are unaffected.
int runAbort(int n) {
  ncclUniqueId id;
  OK(0, nullptr, ncclGetUniqueId(&id));
  std::vector<Rank> R(n);
  std::vector<std::thread> inits;
  for (int r = 0; r < n; r++) {
    R[r] = Rank{r, n, false};
    inits.emplace_back([&, r] { initRank(R[r], id); });
  }
  for (auto& t : inits) t.join();
  for (int r = 0; r < n; r++)
    if (R[r].comm == nullptr) return failures.load() + 1;
  std::vector<float> buf(1024, 1.0f);
  std::atomic<bool> returned{false};
  ncclResult_t blocked = ncclSuccess;
  std::thread caller([&] {
    blocked = ncclAllReduce(buf.data(), buf.data(), buf.size(), ncclFloat32, ncclSum, R[0].comm, nullptr);
    returned = true;
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  CHECK(0, !returned.load(), "the all-reduce waits for peers that never call");
  auto t0 = std::chrono::steady_clock::now();
  OK(0, nullptr, ncclCommAbort(R[0].comm));
  double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  caller.join();
  CHECK(0, blocked != ncclSuccess, "the aborted all-reduce failed");
  CHECK(0, took < 10, "the abort took " + std::to_string(took) + " s");
  int count = 0;
  EXPECT_RESULT(0, nullptr, ncclCommCount(R[0].comm, &count), ncclInvalidArgument);  // gone
  for (int r = 1; r < n; r++) {
    OK(r, R[r].comm, ncclCommCount(R[r].comm, &count));
    OK(r, R[r].comm, ncclCommDestroy(R[r].comm));
  }
  return failures.load();
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: %s procs|threads|group|abort NRANKS\n", argv[0]);
    return 2;
  }
  std::string mode = argv[1];
  int n = std::atoi(argv[2]);
  if (n < 1 || n > 64) return 2;
  // Which libnccl.so.2 the loader picked (NCCL_PROGRAM_EXPECT_LIB: a part
  // of the path it must have, for a binary linked to another NCCL).
  Dl_info where{};
  const char* lib = dladdr(reinterpret_cast<void*>(&ncclGetVersion), &where) != 0 ? where.dli_fname : "?";
  if (const char* want = std::getenv("NCCL_PROGRAM_EXPECT_LIB"); want != nullptr && std::strstr(lib, want) == nullptr) {
    std::fprintf(stderr, "ncclGetVersion comes from %s, not from a path with %s\n", lib, want);
    return 1;
  }
  bool device = false;
  int total = -1;
  if (mode == "procs") {
    total = runProcs(n, &device);  // no CUDA call before its fork
  } else if (mode == "threads") {
    device = useDevice();
    total = runThreads(n, device);
  } else if (mode == "group") {
    device = useDevice();
    total = runGroup(n, device);
  } else if (mode == "abort" && n >= 2) {
    total = runAbort(n);
  }
  if (total < 0) return 2;
  std::printf("nccl_program %s %d on %s buffers, %s: %s (%d failures)\n", mode.c_str(), n, device ? "device" : "host",
              lib, total == 0 ? "all checks passed" : "FAILED", total);
  return total == 0 ? 0 : 1;
}
