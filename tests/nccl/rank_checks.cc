#include "rank_checks.h"

#include <dlfcn.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "element_codec.h"

namespace ncclprog {
namespace {

double value(int rank, size_t i) { return 1 + static_cast<double>((static_cast<size_t>(rank) + i) % 3); }

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
          report(R.rank, NCCLPROG_HERE_, __LINE__, "all-reduce dtype " + std::to_string(t) + " op " + std::to_string(op) + " element " +
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

// Rank q's element i for the rooted and scattered reductions: q + 2 + i % 2,
// so the ranks hold {2, 3, ...} or {3, 4, ...}.  Unlike value(), whose three
// ranks hold {1, 2, 3} (sum 6 = product 6), every op then gives its own
// answer for every N >= 2: sum, product, max, min, average and twice the sum
// all differ.
double distinct(int rank, size_t i) { return rank + 2 + static_cast<double>(i % 2); }

// What op (an ncclRedOp_t, or `premul`: 2 x the sum) makes of element i.
double reduced(ncclRedOp_t op, ncclRedOp_t premul, int nranks, size_t i) {
  double sum = 0, prod = 1, hi = -1e300, lo = 1e300;
  for (int q = 0; q < nranks; q++) {
    const double v = distinct(q, i);
    sum += v;
    prod *= v;
    hi = std::max(hi, v);
    lo = std::min(lo, v);
  }
  if (op == premul) return 2 * sum;
  switch (op) {
    case ncclSum: return sum;
    case ncclProd: return prod;
    case ncclMax: return hi;
    case ncclMin: return lo;
    case ncclAvg: return sum / nranks;
    default: return -1;
  }
}

// ncclReduce (to a root that moves with the op) and ncclReduceScatter with
// every op: the op's mapping to libcoll's is the NCCL layer's, per call.
void checkReductionOps(Rank& R) {
  const int n = R.nranks, me = R.rank;
  float two = 2.0f;
  ncclRedOp_t premul;
  OK(me, R.comm, ncclRedOpCreatePreMulSum(&premul, &two, ncclFloat32, ncclScalarHostImmediate, R.comm));
  const ncclRedOp_t ops[] = {ncclSum, ncclProd, ncclMax, ncclMin, ncclAvg, premul};
  const size_t count = 6;
  for (size_t k = 0; k < sizeof(ops) / sizeof(ops[0]); k++) {
    const ncclRedOp_t op = ops[k];
    const std::string name = op == premul ? "premulsum" : "op " + std::to_string(op);
    {
      const int root = static_cast<int>(k) % n;
      Buf<float> s(R, count), r(R, count);
      for (size_t i = 0; i < count; i++) s.host[i] = static_cast<float>(distinct(me, i));
      s.upload();
      OK(me, R.comm, ncclReduce(s.mem, r.mem, count, ncclFloat32, op, root, R.comm, R.stream));
      auto& g = r.download();
      if (me == root)
        for (size_t i = 0; i < count; i++)
          CHECK(me, g[i] == static_cast<float>(reduced(op, premul, n, i)),
                "reduce " + name + " to root " + std::to_string(root) + ", element " + std::to_string(i) + ": " +
                    std::to_string(g[i]) + " != " + std::to_string(reduced(op, premul, n, i)));
    }
    {  // block p of every rank's input goes to rank p
      Buf<float> s(R, count * n), r(R, count);
      for (int p = 0; p < n; p++)
        for (size_t i = 0; i < count; i++) s.host[p * count + i] = static_cast<float>(distinct(me, p * count + i));
      s.upload();
      OK(me, R.comm, ncclReduceScatter(s.mem, r.mem, count, ncclFloat32, op, R.comm, R.stream));
      auto& g = r.download();
      for (size_t i = 0; i < count; i++) {
        const double want = reduced(op, premul, n, me * count + i);
        CHECK(me, g[i] == static_cast<float>(want), "reduce-scatter " + name + ", element " + std::to_string(i) + ": " +
                                                        std::to_string(g[i]) + " != " + std::to_string(want));
      }
    }
  }
  OK(me, R.comm, ncclRedOpDestroy(premul, R.comm));
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
  // NCCL's device API: exported (PyTorch links both host entry points),
  // refused with a message, the communicator unharmed.  Looked up, since
  // nccl.h does not declare them (nccl_device.h does).
  using DevCommCreate = ncclResult_t (*)(ncclComm_t, const void*, void*);
  auto devCommCreate = reinterpret_cast<DevCommCreate>(dlsym(RTLD_DEFAULT, "ncclDevCommCreate"));
  CHECK(me, devCommCreate != nullptr && dlsym(RTLD_DEFAULT, "ncclDevCommDestroy") != nullptr,
        "ncclDevCommCreate and ncclDevCommDestroy are exported");
  if (devCommCreate != nullptr) {
    alignas(16) unsigned char devComm[512] = {};
    EXPECT_RESULT(me, R.comm, devCommCreate(R.comm, nullptr, devComm), ncclInvalidUsage);
    CHECK(me, std::strstr(ncclGetLastError(R.comm), "device API") != nullptr, ncclGetLastError(R.comm));
  }
  OK(me, R.comm, ncclCommGetAsyncError(R.comm, &async));
  CHECK(me, async == ncclSuccess, "async error after the refusals " + std::to_string(async));
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

}  // namespace

// Everything one rank checks on its communicator, then finalize and destroy.
void runRank(Rank& R) {
  checkQueriesAndErrors(R);
  checkAllReduces(R);
  checkReductionOps(R);
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

}  // namespace ncclprog
