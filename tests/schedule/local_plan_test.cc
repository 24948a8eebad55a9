// The local device path's plans (schedule/local_plan.h) run on host memory
// with the host kernels, bit for bit against a reference computed rank by
// rank: every collective, in and out of place, 1-5 ranks on 1-3 GPUs (hubs),
// pre-multiplied sums with a scalar per rank, avg, scratch sizes that force
// pieces, reduction items of 2, 3 and 8 inputs (chains when the ranks
// outnumber them).  And the claims the executor relies on: two hubs never
// touch the same byte where one of them writes, so they need no order
// between them; a reduction's outputs never overlap its inputs other than
// exactly (its kernel reads and writes each element in one thread).
#include <catch2/catch.hpp>

#include <cstring>
#include <string>
#include <vector>

#include "coll/kernels/reduce.h"
#include "schedule/local_plan.h"

using coll::kernels::DType;
using coll::kernels::Op;
using coll::kernels::ReduceFn;
using coll::sched::CollKind;
using coll::sched::LocalItem;
using coll::sched::LocalPlanArgs;

// A named namespace: the sanitizer builds compile this file in one unity
// batch with the other schedule tests.
namespace local_plan_test {

struct Case {
  CollKind kind;
  int n, hubs;
  size_t count;
  DType dtype;
  size_t es;
  Op op;
  bool premul, avg, inPlace;
  int root;
  size_t scratchBytes;
  int fan;
};

std::string describe(const Case& c) {
  return std::string(coll::sched::collKindName(c.kind)) + " n=" + std::to_string(c.n) + " hubs=" +
         std::to_string(c.hubs) + " count=" + std::to_string(c.count) + " es=" + std::to_string(c.es) +
         (c.premul ? " premul" : "") + (c.avg ? " avg" : "") + (c.inPlace ? " in-place" : "") + " root=" +
         std::to_string(c.root) + " scratch=" + std::to_string(c.scratchBytes) + " fan=" + std::to_string(c.fan);
}

// Each rank's function: its own pre-multiply scalar, the avg divisor.
std::vector<ReduceFn> fnsOf(const Case& c) {
  std::vector<ReduceFn> fns(c.n);
  for (int r = 0; r < c.n; ++r) {
    fns[r].dtype = c.dtype;
    fns[r].op = c.op;
    if (c.premul) {
      fns[r].premul = true;
      if (c.dtype == DType::Int32) fns[r].scalar.i = r + 2;
      else fns[r].scalar.f = 0.75 + 0.5 * r;
    }
    if (c.avg) fns[r].divisor = static_cast<uint64_t>(c.n);
  }
  return fns;
}

// Inputs whose reductions round (floats) and differ per rank and element.
void fill(std::vector<unsigned char>& buf, size_t elems, const Case& c, int rank) {
  for (size_t i = 0; i < elems; ++i) {
    const double v = 0.1 + 1.37 * static_cast<double>((i * 7 + static_cast<size_t>(rank) * 13) % 29) - 9.0;
    unsigned char* p = buf.data() + i * c.es;
    if (c.dtype == DType::Float32) {
      const float f = static_cast<float>(v);
      std::memcpy(p, &f, 4);
    } else if (c.dtype == DType::Float16) {
      const uint16_t h = coll::kernels::floatToHalf(static_cast<float>(v));
      std::memcpy(p, &h, 2);
    } else {
      const int32_t x = static_cast<int32_t>(v * 3);
      std::memcpy(p, &x, 4);
    }
  }
}

// The reduction of rank inputs at [at, at + n) in rank order, as the IPC
// path and the host reference round it.
std::vector<unsigned char> reference(const std::vector<std::vector<unsigned char>>& in, size_t at, size_t n,
                                     const std::vector<ReduceFn>& fns, size_t es) {
  std::vector<unsigned char> acc(n * es), pre(n * es);
  ReduceFn plain = fns[0];
  plain.premul = false;
  const int ranks = static_cast<int>(in.size());
  for (int p = 0; p < ranks; ++p) {
    const unsigned char* src = in[p].data() + at * es;
    const bool last = p == ranks - 1;
    if (fns[p].premul) {
      coll::kernels::reduce(fns[p], pre.data(), nullptr, src, n, true, false);
      src = pre.data();
    }
    coll::kernels::reduce(plain, acc.data(), p == 0 ? nullptr : acc.data(), src, n, false, last);
  }
  return acc;
}

struct Touch {
  uintptr_t begin, end;
  bool write;
};

bool overlap(uintptr_t x, uintptr_t y, size_t bytes) { return x < y + bytes && y < x + bytes; }

// One reduction item as its kernel computes it: inputs in order, each
// pre-multiplied by its rank's scalar when it names one, rounded after each
// step, the post-op with the last; then the result into every output.
void runReduceItem(const LocalItem& it, const std::vector<ReduceFn>& fns, size_t es) {
  const size_t bytes = it.count * es;
  for (int k = 0; k < it.ndst; ++k)
    for (int j = 0; j < it.nsrc; ++j)
      if (it.dst[k] != it.src[j].addr && overlap(it.dst[k], it.src[j].addr, bytes))
        FAIL("a reduction's output overlaps its input " << j << " partially");
  std::vector<unsigned char> acc(bytes), pre(bytes);
  ReduceFn plain = fns[0];
  plain.premul = false;
  for (int j = 0; j < it.nsrc; ++j) {
    const auto* src = reinterpret_cast<const unsigned char*>(it.src[j].addr);
    const int owner = it.src[j].preRank;
    const bool last = j == it.nsrc - 1;
    if (owner >= 0) {
      coll::kernels::reduce(fns[owner], pre.data(), nullptr, src, it.count, true, false);
      src = pre.data();
    }
    if (j == 0 && it.nsrc > 1 && owner < 0) std::memcpy(acc.data(), src, bytes);  // the kernel takes its bits as they are
    else coll::kernels::reduce(plain, acc.data(), j == 0 ? nullptr : acc.data(), src, it.count, false, last && it.post);
  }
  for (int k = 0; k < it.ndst; ++k) std::memcpy(reinterpret_cast<void*>(it.dst[k]), acc.data(), bytes);
}

void runCase(const Case& c) {
  INFO(describe(c));
  const size_t n = static_cast<size_t>(c.n), es = c.es, cnt = c.count;
  const bool bigIn = c.kind == CollKind::ReduceScatter, bigOut = c.kind == CollKind::AllGather;
  const size_t inElems = bigIn ? n * cnt : cnt, outElems = bigOut ? n * cnt : cnt;
  std::vector<std::vector<unsigned char>> sendBufs(n), recvBufs(n), inputs(n);
  for (size_t r = 0; r < n; ++r) {
    recvBufs[r].assign(std::max<size_t>(1, outElems) * es, 0xEE);
    sendBufs[r].assign(std::max<size_t>(1, inElems) * es, 0);
    inputs[r].assign(inElems * es, 0);
    fill(inputs[r], inElems, c, static_cast<int>(r));
  }
  LocalPlanArgs a;
  a.kind = c.kind;
  a.count = cnt;
  a.elemSize = es;
  a.root = c.root;
  a.premul = c.premul;
  a.scratchBytes = c.scratchBytes;
  a.fan = c.fan;
  std::vector<std::vector<unsigned char>> scratch(c.hubs, std::vector<unsigned char>(c.scratchBytes));
  for (auto& s : scratch) a.scratch.push_back(reinterpret_cast<uintptr_t>(s.data()));
  for (size_t r = 0; r < n; ++r) {
    unsigned char* recv = recvBufs[r].data();
    unsigned char* send = sendBufs[r].data();
    // In place: NCCL's layouts (all-gather's input is the rank's output
    // block, reduce-scatter's output its input block).
    if (c.inPlace) send = bigOut ? recv + r * cnt * es : recv;
    if (c.inPlace && bigIn) {
      send = sendBufs[r].data();
      recv = send + r * cnt * es;
    }
    std::memcpy(send, inputs[r].data(), inElems * es);
    a.ranks.push_back({reinterpret_cast<uintptr_t>(send), reinterpret_cast<uintptr_t>(recv), static_cast<int>(r) % c.hubs});
  }
  const std::vector<ReduceFn> fns = fnsOf(c);
  const auto plan = coll::sched::planLocal(a);
  REQUIRE(plan.size() == static_cast<size_t>(c.hubs));

  // Run hub after hub, and note every byte range each hub touches.
  std::vector<std::vector<Touch>> touched(c.hubs);
  for (int h = 0; h < c.hubs; ++h)
    for (const LocalItem& it : plan[h]) {
      const uintptr_t bytes = it.count * es;
      REQUIRE(it.nsrc >= 1);
      REQUIRE(it.nsrc <= c.fan);
      REQUIRE(it.ndst >= 1);
      REQUIRE(it.ndst <= c.fan);
      if (it.kind == LocalItem::Kind::Copy) {
        REQUIRE(it.nsrc == 1);
        for (int k = 0; k < it.ndst; ++k) {
          // One read of the source for several outputs: none may overlap it.
          if (it.ndst > 1 && overlap(it.dst[k], it.src[0].addr, bytes)) FAIL("a copy's output overlaps its source");
          REQUIRE(it.dst[k] != it.src[0].addr);
          std::memmove(reinterpret_cast<void*>(it.dst[k]), reinterpret_cast<const void*>(it.src[0].addr), bytes);
        }
      } else {
        runReduceItem(it, fns, es);
      }
      auto scratchOf = [&](uintptr_t p) { return p >= a.scratch[h] && p < a.scratch[h] + c.scratchBytes; };
      for (int k = 0; k < it.ndst; ++k)
        if (!scratchOf(it.dst[k])) touched[h].push_back({it.dst[k], it.dst[k] + bytes, true});
      for (int j = 0; j < it.nsrc; ++j)
        if (!scratchOf(it.src[j].addr)) touched[h].push_back({it.src[j].addr, it.src[j].addr + bytes, false});
    }
  for (int h = 0; h < c.hubs; ++h)
    for (int g = h + 1; g < c.hubs; ++g)
      for (const Touch& x : touched[h])
        for (const Touch& y : touched[g])
          if ((x.write || y.write) && x.begin < y.end && y.begin < x.end) FAIL("hubs " << h << " and " << g << " overlap");

  // Every rank's output against the reference.
  for (size_t r = 0; r < n; ++r) {
    const unsigned char* got = reinterpret_cast<const unsigned char*>(a.ranks[r].recv);
    std::vector<unsigned char> want;
    switch (c.kind) {
      case CollKind::AllReduce: want = reference(inputs, 0, cnt, fns, es); break;
      case CollKind::Reduce:
        if (static_cast<int>(r) != c.root) continue;
        want = reference(inputs, 0, cnt, fns, es);
        break;
      case CollKind::ReduceScatter: want = reference(inputs, r * cnt, cnt, fns, es); break;
      case CollKind::Broadcast: want = inputs[c.root]; break;
      case CollKind::AllGather:
        for (size_t q = 0; q < n; ++q) want.insert(want.end(), inputs[q].begin(), inputs[q].end());
        break;
      default: FAIL("not a collective");
    }
    REQUIRE(want.size() == outElems * es);
    for (size_t i = 0; i < outElems; ++i)
      if (std::memcmp(got + i * es, want.data() + i * es, es) != 0) FAIL("rank " << r << " element " << i << " wrong");
  }
}

TEST_CASE("local plans: every collective, in and out of place, ranks on 1-3 GPUs, against the reference", "[local]") {
  const CollKind kinds[] = {CollKind::AllReduce, CollKind::Reduce, CollKind::Broadcast, CollKind::AllGather,
                            CollKind::ReduceScatter};
  struct Type {
    DType t;
    size_t es;
  };
  const Type types[] = {{DType::Float32, 4}, {DType::Float16, 2}, {DType::Int32, 4}};
  for (CollKind k : kinds)
    for (int n : {1, 2, 3, 5})
      for (int hubs : {1, 2, 3})
        for (int fan : {2, 3, 8}) {
          if (hubs > n) continue;
          for (size_t count : {size_t{1}, size_t{5}, size_t{97}, size_t{1000}})
          for (const Type& t : types)
            for (int variant = 0; variant < 4; ++variant)  // sum, avg, pre-mul sum, max
              for (bool inPlace : {false, true})
                for (size_t scratch : {size_t{64}, size_t{8192}}) {
                  const bool reducing = k == CollKind::AllReduce || k == CollKind::Reduce || k == CollKind::ReduceScatter;
                  if (!reducing && variant > 0) continue;
                  Case c{k, n, hubs, count, t.t, t.es, variant == 3 ? Op::Max : Op::Sum, variant == 2, variant == 1,
                         inPlace, k == CollKind::Broadcast || k == CollKind::Reduce ? n - 1 : -1, scratch, fan};
                  runCase(c);
                  if (c.root > 0) {
                    c.root = 0;
                    runCase(c);
                  }
                }
      }
}

TEST_CASE("local plans: count 0 plans nothing; an all-reduce on one GPU is one item, chained past the fan",
          "[local]") {
  LocalPlanArgs a;
  a.kind = CollKind::AllReduce;
  a.count = 0;
  a.ranks = {{0x1000, 0x1000, 0}, {0x9000, 0x9000, 0}};
  a.scratch = {0x100000};
  a.scratchBytes = 64;
  auto plan = coll::sched::planLocal(a);
  REQUIRE(plan.size() == 1);
  CHECK(plan[0].empty());
  // One GPU, in place: one reduction reading both inputs and writing both
  // outputs (no copy, no scratch, however small).
  a.count = 1000;
  plan = coll::sched::planLocal(a);
  REQUIRE(plan[0].size() == 1);
  CHECK(plan[0][0].kind == LocalItem::Kind::Reduce);
  CHECK(plan[0][0].nsrc == 2);
  CHECK(plan[0][0].ndst == 2);
  CHECK(plan[0][0].dst[0] == 0x1000);
  CHECK(plan[0][0].dst[1] == 0x9000);
  CHECK(plan[0][0].post);
  // Five ranks, fan 2: rank 0's output accumulates through four items, the
  // last also writing rank 1's, then copies to ranks 2-3 (one read) and 4.
  a.ranks = {{0x1000, 0x1000, 0}, {0x9000, 0x9000, 0}, {0x11000, 0x11000, 0}, {0x19000, 0x19000, 0},
             {0x21000, 0x21000, 0}};
  a.fan = 2;
  plan = coll::sched::planLocal(a);
  REQUIRE(plan[0].size() == 6);
  for (int i = 0; i < 4; ++i) {
    CHECK(plan[0][i].kind == LocalItem::Kind::Reduce);
    CHECK(plan[0][i].dst[0] == 0x1000);
    CHECK(plan[0][i].ndst == (i == 3 ? 2 : 1));
    CHECK(plan[0][i].post == (i == 3));
  }
  for (int i = 4; i < 6; ++i) {
    CHECK(plan[0][i].kind == LocalItem::Kind::Copy);
    CHECK(plan[0][i].src[0].addr == 0x1000);
    CHECK(plan[0][i].ndst == (i == 4 ? 2 : 1));
  }
  // An output that overlaps an input partially goes through the scratch.
  a.ranks = {{0x1000, 0x1004, 0}, {0x9000, 0x9000, 0}};
  a.fan = 8;
  a.count = 10;
  plan = coll::sched::planLocal(a);
  REQUIRE(!plan[0].empty());
  CHECK(plan[0][0].dst[0] == 0x100000);
}

}  // namespace local_plan_test
