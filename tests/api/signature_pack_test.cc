// The call signature as the device kernels compare it: two 64-bit words
// (executor/msg_header.h) that must round-trip every field they carry and
// differ whenever the calls differ.
#include <catch2/catch.hpp>

#include <cstdint>

#include "executor/msg_header.h"

using coll::exec::OpKind;
using coll::exec::Signature;
using coll::sched::CollKind;

namespace {

Signature sig(CollKind k, uint64_t count, uint8_t dtype, OpKind op, int root, uint64_t seq) {
  Signature s;
  s.coll = k;
  s.count = count;
  s.dtype = dtype;
  s.op = op;
  s.root = root;
  s.seq = seq;
  return s;
}

bool samePacked(const Signature& a, const Signature& b) {
  uint64_t wa[2], wb[2];
  REQUIRE(coll::exec::packSignature(a, wa));
  REQUIRE(coll::exec::packSignature(b, wb));
  return wa[0] == wb[0] && wa[1] == wb[1];
}

}  // namespace

TEST_CASE("packed signatures round-trip every field", "[signature]") {
  for (CollKind k : {CollKind::AllReduce, CollKind::AllGather, CollKind::Broadcast, CollKind::ReduceScatter,
                     CollKind::Reduce}) {
    for (int root : {-1, 0, 7, 65533}) {
      const Signature s = sig(k, (uint64_t{1} << 40) + 3, 11, OpKind::PreMulSum, root, (uint64_t{1} << 23) - 1);
      uint64_t w[2];
      REQUIRE(coll::exec::packSignature(s, w));
      CHECK(w[0] != 0);  // 0 means "compare nothing" to the kernels
      const Signature u = coll::exec::unpackSignature(w);
      CHECK(u.coll == s.coll);
      CHECK(u.count == s.count);
      CHECK(u.dtype == s.dtype);
      CHECK(u.op == s.op);
      CHECK(u.root == s.root);
      CHECK(u.seq == s.seq);
      CHECK(coll::exec::compareSignatures(s, 0, u, 1).empty());
    }
  }
}

TEST_CASE("packed signatures differ when any compared field differs", "[signature]") {
  const Signature base = sig(CollKind::AllReduce, 1000, 7, OpKind::Sum, -1, 5);
  CHECK(samePacked(base, base));
  Signature d = base;
  d.count = 1001;
  CHECK_FALSE(samePacked(base, d));
  d = base;
  d.dtype = 2;
  CHECK_FALSE(samePacked(base, d));
  d = base;
  d.op = OpKind::Avg;
  CHECK_FALSE(samePacked(base, d));
  d = base;
  d.coll = CollKind::ReduceScatter;
  CHECK_FALSE(samePacked(base, d));
  d = base;
  d.root = 0;
  CHECK_FALSE(samePacked(base, d));
  d = base;
  d.seq = 6;
  CHECK_FALSE(samePacked(base, d));
}

TEST_CASE("a mismatch decoded from packed words names the field", "[signature]") {
  const Signature mine = sig(CollKind::AllReduce, 100, 7, OpKind::Sum, -1, 3);
  const Signature theirs = sig(CollKind::AllReduce, 200, 7, OpKind::Sum, -1, 3);
  uint64_t w[2];
  REQUIRE(coll::exec::packSignature(theirs, w));
  const std::string diff = coll::exec::compareSignatures(mine, 1, coll::exec::unpackSignature(w), 0);
  CHECK(diff == "count 200 (rank 0) vs 100 (rank 1)");
}

TEST_CASE("roots that do not fit are refused, not truncated", "[signature]") {
  uint64_t w[2];
  CHECK_FALSE(coll::exec::packSignature(sig(CollKind::Broadcast, 1, 7, OpKind::None, 65535, 0), w));
  CHECK_FALSE(coll::exec::packSignature(sig(CollKind::Broadcast, 1, 7, OpKind::None, -2, 0), w));
}
