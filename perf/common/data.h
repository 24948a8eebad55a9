// data.h — input values and independently computed expected results.
//
// Every input element is a pure function of (seed, rank, global index), so
// each rank can compute what any other rank holds — and therefore the exact
// result of any collective — without communicating.  Values are chosen per
// (dtype, op, nranks) so that every partial result of the reduction is
// exactly representable in the dtype; the result is then the same bit
// pattern whatever order, tree or chunking the library reduces in:
//
//   sum/avg   integers in [-a, a] ([0, a] unsigned), a = exactLimit / A,
//             where A is the number of ranks that may be non-zero at an
//             index (all of them unless nranks > exactLimit, e.g. fp8 with
//             many ranks: then only ranks with (rank+index) % G == 0 are
//             non-zero).  Every partial sum is an integer of magnitude
//             <= exactLimit, hence exact.  avg: the exact sum divided once —
//             integers truncate toward zero, float/double divide in their
//             own type, half/bf16/fp8 divide in float and round once (RNE),
//             which is the library's documented rule.
//   premulsum scalar 2 for integers (then a = exactLimit / (2A)), 0.5 for
//             floating types (products and partial sums are k/2 with
//             |k| <= exactLimit: exact because scaling by 2^-1 is exact).
//   prod      +-1 or +-2 (1 or 2 unsigned), at most maxPow2 ranks may hold a
//             2 at an index: every partial product is +-2^k, exact.
//   min/max   integers: random bits over the whole range; floats: k * 2^e,
//             |k| <= exactLimit, e in [-3, 3] (never -0, NaN or inf).
//   none      (all-gather, broadcast, send/recv) random bit patterns of the
//             element size, NaNs included: data movement must copy bits.
#pragma once

#include "common/dtypes.h"

#include <cstddef>
#include <cstdint>
#include <string>

namespace collperf {

// One value in its exact domain: signed ints in i, unsigned in u, floating
// types in f (always exactly representable in the dtype), or raw bits.
struct Num {
  int64_t i = 0;
  uint64_t u = 0;
  double f = 0.0;
};

// Everything value generation needs for one (dtype, op, nranks).
//
// The range functions (fill, expectReducedRange) are what the checks run:
// one loop per (op, kind) chosen once per call, instead of a dispatch per
// element per rank.  The checks are N^2 per output for the reducing
// collectives, and with a per-element dispatch they were ~85% of the
// multi-process tests' time.  The single-element functions go through the
// same loops, so both give the same bits.
class DataGen {
 public:
  DataGen(collDataType_t dtype, RedOp op, int nranks, uint64_t seed);

  collDataType_t dtype() const { return dtype_; }
  RedOp op() const { return op_; }
  int nranks() const { return nranks_; }
  size_t elemSize() const { return esize_; }

  // Fills dst[0..n) (elements) with the values rank `rank` holds at global
  // indices first .. first+n-1.
  void fill(int rank, size_t first, size_t n, void* dst) const;
  // One element of fill (esize bytes).
  void store(int rank, size_t index, void* dst) const { fill(rank, index, 1, dst); }

  // The reduction over all ranks at indices first .. first+n-1, in the
  // dtype's representation.  Not for op None (use fill).
  void expectReducedRange(size_t first, size_t n, void* dst) const;
  void expectReduced(size_t index, void* dst) const { expectReducedRange(index, 1, dst); }

  // Writes a value of this generator's domain (see Num) as an element.
  void storeNum(const Num& n, void* dst) const;

  // The pre-multiplication scalar (for PreMulSum), in the dtype's bytes.
  void premulScalar(void* dst8) const;

 private:
  friend struct DataLoops;  // the per-(op, kind) loops, data.cc

  collDataType_t dtype_;
  RedOp op_;
  int nranks_;
  uint64_t seed_;
  NumKind kind_;
  size_t esize_;
  uint64_t group_ = 1;  // G: ranks with (rank + index) % G == 0 are active
  uint64_t amp_ = 0;    // sum/avg/premulsum amplitude
  uint64_t limit_ = 0;  // the dtype's exactLimit (min/max of floats)
};

// Writes the integer v (small: exact in every dtype) as an element of dtype.
void storeSmallInt(collDataType_t dtype, int v, void* dst);
// Fills n elements with v.
void fillSmallInt(collDataType_t dtype, int v, size_t n, void* dst);

// Byte patterns for regions the library must not write.
uint8_t sentinelByte(uint64_t seed);
uint8_t guardByte(uint64_t seed);

// 64-bit mixing (splitmix64 finalizer).  Inline: the checks call it once
// per element per rank (N^2 times an output for the reducing collectives).
inline uint64_t mix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

// "0x0041 (2.5)" — an element's bits and value, for failure messages.
std::string formatElem(collDataType_t dtype, const void* p);

// Bit-exact comparison of one element.
bool sameElem(const void* a, const void* b, size_t esize);

}  // namespace collperf
