#include "bad_args.h"

#include <algorithm>
#include <cctype>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <functional>
#include <limits>

using namespace collperf;

namespace {

constexpr size_t kElems = 64;         // elements in each test buffer
constexpr uint8_t kSentinel = 0xB7;   // bytes the failed call must not touch

std::string lower(std::string s) {
  for (char& ch : s) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  return s;
}

struct BadArgs {
  const RankInfo& ri;
  std::vector<uint8_t>* verdicts;
  std::vector<std::string>* messages;
  bool verbose;
  std::vector<float> send = std::vector<float>(kElems * 16, 1.0f);
  std::vector<uint8_t> recv = std::vector<uint8_t>(kElems * 4 * 16 + 64);

  // Runs call() with a sentinel-filled recv area; expects collInvalidArgument,
  // an untouched recv area and a message holding one of `keywords`.
  void expect(const char* name, const std::vector<const char*>& keywords, bool nullComm,
              const std::function<collResult_t(void* recvArea)>& call) {
    std::fill(recv.begin(), recv.end(), kSentinel);
    collResult_t res = call(recv.data() + 32);
    std::string err;
    bool ok = true;
    if (res != collInvalidArgument) {
      ok = false;
      err += std::string("returned ") + collGetErrorString(res) + " (" + std::to_string(static_cast<int>(res)) +
             "), expected collInvalidArgument; ";
    }
    size_t touched = 0;
    for (uint8_t b : recv) touched += b != kSentinel;
    if (touched) {
      ok = false;
      err += "recvbuff modified (" + std::to_string(touched) + " bytes); ";
    }
    const char* last = collGetLastError(nullComm ? nullptr : ri.comm);
    std::string msg = last ? last : "";
    if (msg.empty()) {
      ok = false;
      err += "collGetLastError is empty; ";
    } else {
      std::string lm = lower(msg);
      bool named = false;
      for (const char* k : keywords) named = named || lm.find(k) != std::string::npos;
      if (!named) {
        ok = false;
        err += "last error does not name the argument: \"" + msg + "\"; ";
      }
    }
    verdicts->push_back(ok ? 0 : 1);
    if (verbose && ri.rank == 0)
      std::printf("[mp_check] badargs %-52s %s: %s\n", name, ok ? "ok" : "FAILED", msg.c_str());
    if (!ok) messages->push_back(std::string("badargs ") + name + ": " + err);
  }
};

}  // namespace

void runBadArgChecks(const RankInfo& ri, std::vector<uint8_t>* verdicts, std::vector<std::string>* messages,
                     bool verbose) {
  BadArgs b{ri, verdicts, messages, verbose};
  collComm_t comm = ri.comm;
  const float* sb = b.send.data();
  const int n = ri.nranks;
  const size_t sz = std::numeric_limits<size_t>::max();
  const std::vector<const char*> kComm{"comm"};
  const std::vector<const char*> kType{"type"};
  const std::vector<const char*> kOp{"op"};
  const std::vector<const char*> kRoot{"root"};
  const std::vector<const char*> kPeer{"peer"};
  const std::vector<const char*> kCount{"count", "overflow", "size"};
  const std::vector<const char*> kOverlap{"overlap", "alias", "in-place", "inplace", "in place"};
  const std::vector<const char*> kRecv{"recvbuf", "recv"};
  const std::vector<const char*> kSend{"sendbuf", "send"};

  // -- null communicator (the message is the thread's: collGetLastError(NULL))
  b.expect("allreduce null comm", kComm, true, [&](void* r) {
    return collAllReduce(sb, r, 4, collFloat32, collSum, nullptr, nullptr);
  });
  b.expect("broadcast null comm", kComm, true, [&](void* r) {
    return collBroadcast(sb, r, 4, collFloat32, 0, nullptr, nullptr);
  });

  // -- datatype out of range
  b.expect("allreduce dtype collNumTypes", kType, false, [&](void* r) {
    return collAllReduce(sb, r, 4, collNumTypes, collSum, comm, nullptr);
  });
  // (Only values inside the enum's value range 0..15: anything else is
  // undefined behaviour on the caller's side and trips UBSan's enum check.)
  b.expect("allgather dtype collNumTypes", kType, false, [&](void* r) {
    return collAllGather(sb, r, 4, collNumTypes, comm, nullptr);
  });
  b.expect("broadcast dtype 13", kType, false, [&](void* r) {
    return collBroadcast(sb, r, 4, static_cast<collDataType_t>(13), 0, comm, nullptr);
  });

  // -- reduction op that was never created / was destroyed
  b.expect("allreduce op collNumOps", kOp, false, [&](void* r) {
    return collAllReduce(sb, r, 4, collFloat32, collNumOps, comm, nullptr);
  });
  b.expect("reducescatter op 1000", kOp, false, [&](void* r) {
    return collReduceScatter(sb, r, 4, collFloat32, static_cast<collRedOp_t>(1000), comm, nullptr);
  });
  b.expect("reduce op collMaxRedOp", kOp, false, [&](void* r) {
    return collReduce(sb, r, 4, collFloat32, collMaxRedOp, 0, comm, nullptr);
  });
  b.expect("allreduce destroyed premulsum op", kOp, false, [&](void* r) {
    collRedOp_t op;
    float two = 2.0f;
    collResult_t res = collRedOpCreatePreMulSum(&op, &two, collFloat32, collScalarHostImmediate, comm);
    if (res != collSuccess) return collInternalError;  // reported as a wrong return code
    res = collRedOpDestroy(op, comm);
    if (res != collSuccess) return collInternalError;
    return collAllReduce(sb, r, 4, collFloat32, op, comm, nullptr);
  });

  // -- root out of range
  b.expect("broadcast root nranks", kRoot, false, [&](void* r) {
    return collBroadcast(sb, r, 4, collFloat32, n, comm, nullptr);
  });
  b.expect("broadcast root -1", kRoot, false, [&](void* r) {
    return collBroadcast(sb, r, 4, collFloat32, -1, comm, nullptr);
  });
  b.expect("reduce root nranks", kRoot, false, [&](void* r) {
    return collReduce(sb, r, 4, collFloat32, collSum, n, comm, nullptr);
  });
  b.expect("reduce root -1", kRoot, false, [&](void* r) {
    return collReduce(sb, r, 4, collFloat32, collSum, -1, comm, nullptr);
  });

  // -- send/recv peer out of range (outside a group: fails at the call)
  b.expect("send peer nranks", kPeer, false, [&](void*) {
    return collSend(sb, 4, collFloat32, n, comm, nullptr);
  });
  b.expect("recv peer -1", kPeer, false, [&](void* r) {
    return collRecv(r, 4, collFloat32, -1, comm, nullptr);
  });

  // -- count * element size (or nranks * count * size) overflows size_t
  b.expect("allreduce count overflow", kCount, false, [&](void* r) {
    return collAllReduce(sb, r, sz / 2 + 1, collFloat32, collSum, comm, nullptr);
  });
  b.expect("broadcast count overflow", kCount, false, [&](void* r) {
    return collBroadcast(sb, r, sz / 4 + 1, collFloat64, 0, comm, nullptr);
  });
  b.expect("reduce count overflow", kCount, false, [&](void* r) {
    return collReduce(sb, r, sz / 2 + 1, collInt32, collSum, 0, comm, nullptr);
  });
  b.expect("allgather count overflow", kCount, false, [&](void* r) {
    return collAllGather(sb, r, sz / 2 + 1, collFloat16, comm, nullptr);
  });
  b.expect("reducescatter count overflow", kCount, false, [&](void* r) {
    return collReduceScatter(sb, r, sz / 8 + 1, collInt64, collSum, comm, nullptr);
  });
  if (n >= 2) {
    // count * size fits; nranks * count * size does not.
    b.expect("allgather nranks*count overflow", kCount, false, [&](void* r) {
      return collAllGather(sb, r, sz / 4, collFloat32, comm, nullptr);
    });
    b.expect("reducescatter nranks*count overflow", kCount, false, [&](void* r) {
      return collReduceScatter(sb, r, sz / 4, collFloat32, collSum, comm, nullptr);
    });
  }

  // -- send and recv overlap without being the in-place layout
  const size_t es = sizeof(float);
  const size_t cnt = 8;
  b.expect("allreduce overlap (recv = send + 1)", kOverlap, false, [&](void* r) {
    auto* base = static_cast<uint8_t*>(r);
    return collAllReduce(base, base + es, cnt, collFloat32, collSum, comm, nullptr);
  });
  b.expect("allreduce overlap (send = recv + 3)", kOverlap, false, [&](void* r) {
    auto* base = static_cast<uint8_t*>(r);
    return collAllReduce(base + 3 * es, base, cnt, collFloat32, collSum, comm, nullptr);
  });
  b.expect("allgather overlap (send = recv + rank*count + 1)", kOverlap, false, [&](void* r) {
    auto* base = static_cast<uint8_t*>(r);
    return collAllGather(base + (static_cast<size_t>(ri.rank) * cnt + 1) * es, base, cnt, collFloat32, comm,
                         nullptr);
  });
  b.expect("reducescatter overlap (recv = send + rank*count + 1)", kOverlap, false, [&](void* r) {
    auto* base = static_cast<uint8_t*>(r);
    return collReduceScatter(base, base + (static_cast<size_t>(ri.rank) * cnt + 1) * es, cnt, collFloat32,
                             collSum, comm, nullptr);
  });

  // -- NULL recvbuff (or sendbuff) with count > 0; reduce's recvbuff and
  //    broadcast's sendbuff are only used on root, so those are skipped.
  b.expect("allreduce recvbuff NULL", kRecv, false, [&](void*) {
    return collAllReduce(sb, nullptr, 4, collFloat32, collSum, comm, nullptr);
  });
  b.expect("allgather recvbuff NULL", kRecv, false, [&](void*) {
    return collAllGather(sb, nullptr, 4, collFloat32, comm, nullptr);
  });
  b.expect("broadcast recvbuff NULL", kRecv, false, [&](void*) {
    return collBroadcast(sb, nullptr, 4, collFloat32, 0, comm, nullptr);
  });
  b.expect("reducescatter recvbuff NULL", kRecv, false, [&](void*) {
    return collReduceScatter(sb, nullptr, 4, collFloat32, collSum, comm, nullptr);
  });
  b.expect("allreduce sendbuff NULL", kSend, false, [&](void* r) {
    return collAllReduce(nullptr, r, 4, collFloat32, collSum, comm, nullptr);
  });
}
