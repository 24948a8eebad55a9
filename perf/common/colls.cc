#include "common/colls.h"

#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <new>

namespace collperf {

const char* collLabel(Coll c) {
  switch (c) {
    case Coll::AllReduce: return "allreduce";
    case Coll::AllGather: return "allgather";
    case Coll::Broadcast: return "broadcast";
    case Coll::ReduceScatter: return "reducescatter";
    case Coll::Reduce: return "reduce";
    case Coll::SendRecv: return "sendrecv";
  }
  return "?";
}

bool collHasOp(Coll c) {
  return c == Coll::AllReduce || c == Coll::ReduceScatter || c == Coll::Reduce;
}
bool collHasRoot(Coll c) { return c == Coll::Broadcast || c == Coll::Reduce; }

bool parseColl(const std::string& s, Coll* out) {
  for (int i = 0; i < kNumColls; ++i) {
    Coll c = static_cast<Coll>(i);
    if (s == collLabel(c)) {
      *out = c;
      return true;
    }
  }
  return false;
}

Layout layoutOf(Coll c, size_t count, int nranks, int rank) {
  Layout l;
  const size_t n = static_cast<size_t>(nranks);
  const size_t r = static_cast<size_t>(rank);
  switch (c) {
    case Coll::AllGather:
      l.sendCount = count;
      l.recvCount = n * count;
      l.inplaceCount = n * count;
      l.sendInplaceOffset = r * count;
      break;
    case Coll::ReduceScatter:
      l.sendCount = n * count;
      l.recvCount = count;
      l.inplaceCount = n * count;
      l.recvInplaceOffset = r * count;
      break;
    default:
      l.sendCount = l.recvCount = l.inplaceCount = count;
      break;
  }
  return l;
}

PerfSizes perfSizes(Coll c, size_t bytes, size_t esize, int nranks) {
  PerfSizes p{};
  const size_t elems = bytes / esize;
  const size_t n = static_cast<size_t>(nranks);
  const double nd = static_cast<double>(nranks);
  switch (c) {
    case Coll::AllReduce:
      p.count = elems;
      p.sizeBytes = p.algBytes = elems * esize;
      p.busFactor = 2.0 * (nd - 1.0) / nd;
      break;
    case Coll::AllGather:
    case Coll::ReduceScatter:
      p.count = elems / n;
      p.sizeBytes = p.algBytes = p.count * n * esize;
      p.busFactor = (nd - 1.0) / nd;
      break;
    default:
      p.count = elems;
      p.sizeBytes = p.algBytes = elems * esize;
      p.busFactor = 1.0;
      break;
  }
  return p;
}

// ---- GuardedBuffer ----

GuardedBuffer::~GuardedBuffer() { std::free(base_); }

void GuardedBuffer::reserve(size_t bytes) {
  if (base_ && bytes <= cap_) return;
  std::free(base_);
  base_ = nullptr;
  cap_ = 0;
  void* p = nullptr;
  // 64-byte aligned payload: kGuard is a multiple of 64.
  if (posix_memalign(&p, 64, bytes + 2 * kGuard) != 0) throw std::bad_alloc();
  base_ = static_cast<uint8_t*>(p);
  cap_ = bytes;
}

void GuardedBuffer::setGuards(size_t bytes, uint8_t pattern) {
  std::memset(base_, pattern, kGuard);
  std::memset(base_ + kGuard + bytes, pattern, kGuard);
}

size_t GuardedBuffer::checkGuards(size_t bytes, uint8_t pattern) const {
  size_t bad = 0;
  for (size_t k = 0; k < kGuard; ++k) {
    bad += base_[k] != pattern;
    bad += base_[kGuard + bytes + k] != pattern;
  }
  return bad;
}

// ---- cases ----

std::string describe(const CaseSpec& s) {
  char buf[200];
  std::snprintf(buf, sizeof buf, "%s %s %s count %zu root %d %s", collLabel(s.coll), dtypeLabel(s.dtype),
                collHasOp(s.coll) ? redOpLabel(s.op) : "-", s.count, collHasRoot(s.coll) ? s.root : -1,
                s.inplace ? "in-place" : "out-of-place");
  return buf;
}

namespace {

constexpr uint64_t kJunkSalt = 0x6a756e6b6a756e6bull;  // non-root broadcast send data

RedOp dataOp(const CaseSpec& s) { return collHasOp(s.coll) ? s.op : RedOp::None; }

DataGen mainGen(const RankInfo& ri, const CaseSpec& s) {
  return DataGen(s.dtype, dataOp(s), ri.nranks, s.seed);
}
DataGen junkGen(const RankInfo& ri, const CaseSpec& s) {
  return DataGen(s.dtype, RedOp::None, ri.nranks, s.seed ^ kJunkSalt);
}

}  // namespace

void prepareCase(const RankInfo& ri, const CaseSpec& s, CaseBuffers& bufs) {
  const size_t es = dtypeBytes(s.dtype);
  const Layout l = layoutOf(s.coll, s.count, ri.nranks, ri.rank);
  const uint8_t sent = sentinelByte(s.seed);
  const uint8_t guard = guardByte(s.seed);
  const DataGen gen = mainGen(ri, s);
  const bool isRoot = ri.rank == s.root;

  if (!s.inplace) {
    bufs.send.reserve(l.sendCount * es);
    bufs.recv.reserve(l.recvCount * es);
    if (s.coll == Coll::Broadcast && !isRoot) {
      junkGen(ri, s).fill(ri.rank, 0, l.sendCount, bufs.send.data());
    } else {
      gen.fill(ri.rank, 0, l.sendCount, bufs.send.data());
    }
    std::memset(bufs.recv.data(), sent, l.recvCount * es);
    bufs.send.setGuards(l.sendCount * es, guard);
    bufs.recv.setGuards(l.recvCount * es, guard);
    return;
  }

  bufs.recv.reserve(l.inplaceCount * es);
  uint8_t* buf = bufs.recv.data();
  switch (s.coll) {
    case Coll::AllGather:
      std::memset(buf, sent, l.inplaceCount * es);
      gen.fill(ri.rank, 0, s.count, buf + l.sendInplaceOffset * es);
      break;
    case Coll::Broadcast:
      if (isRoot) gen.fill(ri.rank, 0, s.count, buf);
      else std::memset(buf, sent, l.inplaceCount * es);
      break;
    default:  // allreduce, reduce, send/recv: count; reduce-scatter: nranks*count
      gen.fill(ri.rank, 0, l.inplaceCount, buf);
      break;
  }
  bufs.recv.setGuards(l.inplaceCount * es, guard);
}

void casePointers(const RankInfo& ri, const CaseSpec& s, CaseBuffers& bufs, const void** send,
                  void** recv) {
  if (!s.inplace) {
    *send = bufs.send.data();
    *recv = bufs.recv.data();
    return;
  }
  const size_t es = dtypeBytes(s.dtype);
  const Layout l = layoutOf(s.coll, s.count, ri.nranks, ri.rank);
  *send = bufs.recv.data() + l.sendInplaceOffset * es;
  *recv = bufs.recv.data() + l.recvInplaceOffset * es;
}

collResult_t acquireOp(const RankInfo& ri, const CaseSpec& s, collRedOp_t* op) {
  if (!collHasOp(s.coll) || s.op == RedOp::None) {
    *op = collSum;
    return collSuccess;
  }
  if (s.op != RedOp::PreMulSum) {
    *op = builtinOp(s.op);
    return collSuccess;
  }
  alignas(8) unsigned char scalar[8];
  mainGen(ri, s).premulScalar(scalar);
  return collRedOpCreatePreMulSum(op, scalar, s.dtype, collScalarHostImmediate, ri.comm);
}

collResult_t releaseOp(const RankInfo& ri, const CaseSpec& s, collRedOp_t op) {
  if (collHasOp(s.coll) && s.op == RedOp::PreMulSum) return collRedOpDestroy(op, ri.comm);
  return collSuccess;
}

collResult_t issueCase(const RankInfo& ri, const CaseSpec& s, const void* send, void* recv,
                       collRedOp_t op) {
  switch (s.coll) {
    case Coll::AllReduce:
      return collAllReduce(send, recv, s.count, s.dtype, op, ri.comm, nullptr);
    case Coll::AllGather:
      return collAllGather(send, recv, s.count, s.dtype, ri.comm, nullptr);
    case Coll::Broadcast:
      return collBroadcast(send, recv, s.count, s.dtype, s.root, ri.comm, nullptr);
    case Coll::ReduceScatter:
      return collReduceScatter(send, recv, s.count, s.dtype, op, ri.comm, nullptr);
    case Coll::Reduce:
      return collReduce(send, recv, s.count, s.dtype, op, s.root, ri.comm, nullptr);
    case Coll::SendRecv: {
      const int next = (ri.rank + 1) % ri.nranks;
      const int prev = (ri.rank - 1 + ri.nranks) % ri.nranks;
      collResult_t res = collGroupStart();
      if (res != collSuccess) return res;
      collResult_t r1 = collSend(send, s.count, s.dtype, next, ri.comm, nullptr);
      collResult_t r2 = collRecv(recv, s.count, s.dtype, prev, ri.comm, nullptr);
      collResult_t r3 = collGroupEnd();
      if (r1 != collSuccess) return r1;
      if (r2 != collSuccess) return r2;
      return r3;
    }
  }
  return collInvalidArgument;
}

collResult_t runCase(const RankInfo& ri, const CaseSpec& s, CaseBuffers& bufs) {
  collRedOp_t op;
  collResult_t res = acquireOp(ri, s, &op);
  if (res != collSuccess) return res;
  const void* send = nullptr;
  void* recv = nullptr;
  casePointers(ri, s, bufs, &send, &recv);
  res = issueCase(ri, s, send, recv, op);
  collResult_t rel = releaseOp(ri, s, op);
  return res != collSuccess ? res : rel;
}

namespace {

struct Checker {
  const RankInfo& ri;
  const CaseSpec& spec;
  size_t es;
  std::vector<Failure>* failures;
  size_t maxFailures;
  size_t wrong = 0;

  void record(const char* what, size_t index, const std::string& exp, const std::string& got) {
    ++wrong;
    if (!failures || failures->size() >= maxFailures) return;
    Failure f;
    f.rank = ri.rank;
    f.spec = spec;
    f.what = what;
    f.index = index;
    f.expected = exp;
    f.got = got;
    failures->push_back(std::move(f));
  }
  void elem(const char* what, size_t index, const void* exp, const void* got) {
    if (sameElem(exp, got, es)) return;
    record(what, index, formatElem(spec.dtype, exp), formatElem(spec.dtype, got));
  }
  void untouched(const char* what, const uint8_t* p, size_t n, uint8_t sent) {
    for (size_t i = 0; i < n; ++i) {
      const uint8_t* e = p + i * es;
      bool ok = true;
      for (size_t b = 0; b < es; ++b) ok = ok && e[b] == sent;
      if (!ok) {
        uint8_t expv[8];
        std::memset(expv, sent, sizeof expv);
        record(what, i, formatElem(spec.dtype, expv), formatElem(spec.dtype, e));
      }
    }
  }
  // Elements [0, n) of p must equal gen.store(rank, first + i).
  void values(const char* what, const DataGen& gen, int rank, size_t first, const uint8_t* p, size_t n,
              size_t indexBase) {
    compare(what, p, n, indexBase,
            [&](size_t at, size_t m, uint8_t* exp) { gen.fill(rank, first + at, m, exp); });
  }
  // Elements [0, n) of p must equal gen.expectReduced(first + i).
  void reduced(const char* what, const DataGen& gen, size_t first, const uint8_t* p, size_t n) {
    compare(what, p, n, 0, [&](size_t at, size_t m, uint8_t* exp) { gen.expectReducedRange(first + at, m, exp); });
  }
  // Block by block: expect(at, m, exp) writes the m elements expected from
  // element `at` on; a block that differs is compared element by element.
  template <class Expect>
  void compare(const char* what, const uint8_t* p, size_t n, size_t indexBase, Expect expect) {
    constexpr size_t kBlock = 2048;
    uint8_t exp[kBlock * 8];
    for (size_t at = 0; at < n; at += kBlock) {
      const size_t m = std::min(kBlock, n - at);
      expect(at, m, exp);
      if (std::memcmp(exp, p + at * es, m * es) == 0) continue;
      for (size_t i = 0; i < m; ++i) elem(what, indexBase + at + i, exp + i * es, p + (at + i) * es);
    }
  }
  void guards(const char* what, const GuardedBuffer& b, size_t bytes, uint8_t pattern) {
    size_t bad = b.checkGuards(bytes, pattern);
    if (bad == 0) return;
    char e[32], g[64];
    std::snprintf(e, sizeof e, "0x%02x", pattern);
    std::snprintf(g, sizeof g, "%zu corrupted bytes", bad);
    wrong += bad - 1;
    record(what, 0, e, g);
  }
};

}  // namespace

size_t verifyCase(const RankInfo& ri, const CaseSpec& s, const CaseBuffers& bufs,
                  std::vector<Failure>* failures, size_t maxFailures) {
  const size_t es = dtypeBytes(s.dtype);
  const Layout l = layoutOf(s.coll, s.count, ri.nranks, ri.rank);
  const uint8_t sent = sentinelByte(s.seed);
  const uint8_t guard = guardByte(s.seed);
  const DataGen gen = mainGen(ri, s);
  const bool isRoot = ri.rank == s.root;
  const int prev = (ri.rank - 1 + ri.nranks) % ri.nranks;
  Checker c{ri, s, es, failures, maxFailures};

  const uint8_t* out = s.inplace ? bufs.recv.data() + l.recvInplaceOffset * es : bufs.recv.data();
  switch (s.coll) {
    case Coll::AllReduce:
      c.reduced("output", gen, 0, out, s.count);
      break;
    case Coll::AllGather:
      for (int r = 0; r < ri.nranks; ++r)
        c.values("output", gen, r, 0, out + static_cast<size_t>(r) * s.count * es, s.count,
                 static_cast<size_t>(r) * s.count);
      break;
    case Coll::Broadcast:
      c.values("output", gen, s.root, 0, out, s.count, 0);
      break;
    case Coll::ReduceScatter:
      c.reduced("output", gen, static_cast<size_t>(ri.rank) * s.count, out, s.count);
      break;
    case Coll::Reduce:
      if (isRoot) c.reduced("output", gen, 0, out, s.count);
      else if (s.inplace) c.values("non-root buffer modified", gen, ri.rank, 0, out, s.count, 0);
      else c.untouched("non-root recvbuf written", out, s.count, sent);
      break;
    case Coll::SendRecv:
      c.values("output", gen, prev, 0, out, s.count, 0);
      break;
  }

  if (!s.inplace) {
    // The send buffer is const: it must come back unchanged.
    if (s.coll == Coll::Broadcast && !isRoot)
      c.values("sendbuff modified", junkGen(ri, s), ri.rank, 0, bufs.send.data(), l.sendCount, 0);
    else
      c.values("sendbuff modified", gen, ri.rank, 0, bufs.send.data(), l.sendCount, 0);
    c.guards("guard around sendbuff", bufs.send, l.sendCount * es, guard);
    c.guards("guard around recvbuff", bufs.recv, l.recvCount * es, guard);
  } else {
    c.guards("guard around buffer", bufs.recv, l.inplaceCount * es, guard);
  }
  return c.wrong;
}

std::string formatFailure(const Failure& f) {
  char head[64];
  std::snprintf(head, sizeof head, "FAIL rank %d ", f.rank);
  return std::string(head) + describe(f.spec) + ": " + f.what + " index " + std::to_string(f.index) +
         " expected " + f.expected + " got " + f.got;
}

void dieOnCollError(const RankInfo& ri, collResult_t res, const char* what) {
  std::fprintf(stderr, "rank %d: %s failed: %s (%d): %s\n", ri.rank, what, collGetErrorString(res),
               static_cast<int>(res), collGetLastError(ri.comm));
  std::fflush(stderr);
  std::fflush(stdout);
  std::exit(1);
}

}  // namespace collperf
