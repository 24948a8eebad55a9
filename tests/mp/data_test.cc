// data_test.cc — the checker's data (perf/common/data.h) against the host
// reduction kernels.
//
// coll_mp_check and the perf tools' -c trust two claims: every rank can
// compute the exact result of any reduction from (seed, rank, index) alone,
// and that result is the same bits whatever order the library reduces in.
// Here each rank's inputs are generated with fill(), reduced with
// coll::kernels::reduce rank by rank (forwards and backwards), and compared
// bit for bit with expectReducedRange(), for every dtype x op and rank
// counts that switch on the generator's sparse modes (more ranks than a
// dtype can sum or multiply exactly).
#include <catch2/catch.hpp>

#include <coll/kernels/reduce.h>

#include <cstring>
#include <string>
#include <vector>

#include "common/data.h"
#include "common/dtypes.h"

using namespace collperf;
namespace kk = coll::kernels;

namespace {

const RedOp kReducing[] = {RedOp::Sum, RedOp::Prod, RedOp::Max, RedOp::Min, RedOp::Avg, RedOp::PreMulSum};

kk::ReduceFn reduceFnFor(const DataGen& g) {
  kk::ReduceFn fn;
  fn.dtype = static_cast<kk::DType>(g.dtype());
  switch (g.op()) {
    case RedOp::Prod: fn.op = kk::Op::Prod; break;
    case RedOp::Max: fn.op = kk::Op::Max; break;
    case RedOp::Min: fn.op = kk::Op::Min; break;
    default: fn.op = kk::Op::Sum; break;
  }
  if (g.op() == RedOp::Avg) fn.divisor = static_cast<uint64_t>(g.nranks());
  if (g.op() == RedOp::PreMulSum) {
    // The scalar the perf tools pass, read back into the kernels' domain.
    fn.premul = true;
    const NumKind kind = dtypeInfo(g.dtype()).kind;
    if (kind == NumKind::Float) fn.scalar.f = 0.5;
    else if (kind == NumKind::Signed) fn.scalar.i = 2;
    else fn.scalar.u = 2;
  }
  return fn;
}

// The reduction of every rank's fill() over [first, first + n), in the rank
// order given, as the library's kernels compute it: pre on every input,
// post once on the last combine.
std::vector<uint8_t> reduceWithKernels(const DataGen& g, const std::vector<int>& order, size_t first, size_t n) {
  const kk::ReduceFn fn = reduceFnFor(g);
  const size_t es = g.elemSize();
  std::vector<uint8_t> acc(n * es), in(n * es);
  for (size_t k = 0; k < order.size(); ++k) {
    g.fill(order[k], first, n, in.data());
    const bool last = k + 1 == order.size();
    kk::reduce(fn, acc.data(), k == 0 ? nullptr : acc.data(), in.data(), n, true, last);
  }
  return acc;
}

std::string caseName(collDataType_t dt, RedOp op, int nranks) {
  return std::string(dtypeLabel(dt)) + " " + redOpLabel(op) + " N=" + std::to_string(nranks);
}

}  // namespace

TEST_CASE("expected reductions are the kernels' results in any rank order", "[data]") {
  for (collDataType_t dt : kAllDtypes)
    for (RedOp op : kReducing)
      // 17 and 300: more ranks than fp8 (and, at 300, int8) can sum exactly
      // and more than fp8 can multiply by 2 exactly: the sparse modes.
      for (int nranks : {1, 2, 3, 8, 17, 300}) {
        INFO(caseName(dt, op, nranks));
        const DataGen g(dt, op, nranks, 0xC0FFEEull + static_cast<uint64_t>(nranks));
        const size_t es = g.elemSize();
        // Global indices off any power of two, over more than one of the
        // generator's blocks of 1024 (two at 300 ranks, three elsewhere).
        const size_t first = 1000, n = nranks > 17 ? 1100 : 2500;
        std::vector<int> forward, backward;
        for (int r = 0; r < nranks; ++r) forward.push_back(r);
        backward.assign(forward.rbegin(), forward.rend());

        std::vector<uint8_t> expect(n * es);
        g.expectReducedRange(first, n, expect.data());
        const auto fwd = reduceWithKernels(g, forward, first, n);
        const auto bwd = reduceWithKernels(g, backward, first, n);
        size_t badFwd = 0, badBwd = 0, firstBad = n;
        for (size_t i = 0; i < n; ++i) {
          const bool f = std::memcmp(&fwd[i * es], &expect[i * es], es) != 0;
          const bool b = std::memcmp(&bwd[i * es], &expect[i * es], es) != 0;
          badFwd += f;
          badBwd += b;
          if ((f || b) && firstBad == n) firstBad = i;
        }
        if (firstBad < n) {
          INFO("index " << first + firstBad << ": expected " << formatElem(dt, &expect[firstBad * es])
                        << ", forwards " << formatElem(dt, &fwd[firstBad * es]) << ", backwards "
                        << formatElem(dt, &bwd[firstBad * es]));
          CHECK(badFwd == 0);
          CHECK(badBwd == 0);
        }

        // The one-element form gives the same bits as the range.
        for (size_t i : {size_t{0}, size_t{1023}, size_t{1024}, n - 1}) {  // either side of a block's end
          uint8_t one[8];
          g.expectReduced(first + i, one);
          CHECK(std::memcmp(one, &expect[i * es], es) == 0);
        }
      }
}

TEST_CASE("fill: a range is the elements one by one, wherever it starts", "[data]") {
  for (collDataType_t dt : kAllDtypes)
    for (RedOp op : {RedOp::Sum, RedOp::Prod, RedOp::Max, RedOp::Min, RedOp::Avg, RedOp::PreMulSum, RedOp::None}) {
      INFO(caseName(dt, op, 5));
      const DataGen g(dt, op, 5, 42);
      const size_t es = g.elemSize(), n = 3000;
      std::vector<uint8_t> whole(n * es), part(n * es);
      g.fill(3, 0, n, whole.data());
      // A range from an odd start equals the tail of the whole one.
      g.fill(3, 777, n - 777, part.data());
      CHECK(std::memcmp(part.data(), &whole[777 * es], (n - 777) * es) == 0);
      size_t mismatched = 0;
      for (size_t i = 0; i < n; i += 7) {
        uint8_t one[8];
        g.store(3, i, one);
        mismatched += std::memcmp(one, &whole[i * es], es) != 0;
      }
      CHECK(mismatched == 0);
      // Another rank holds other data (the checks would miss swapped
      // buffers otherwise); prod's +-1/+-2 still differ somewhere in 3000.
      g.fill(4, 0, n, part.data());
      CHECK(std::memcmp(part.data(), whole.data(), n * es) != 0);
    }
}
