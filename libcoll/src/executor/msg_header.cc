#include "executor/msg_header.h"

#include <fmt/format.h>

#include "coll/kernels/reduce.h"

namespace coll::exec {

const char* opKindName(OpKind k) {
  switch (k) {
    case OpKind::None: return "none";
    case OpKind::Sum: return "sum";
    case OpKind::Prod: return "prod";
    case OpKind::Max: return "max";
    case OpKind::Min: return "min";
    case OpKind::Avg: return "avg";
    case OpKind::PreMulSum: return "premulsum";
  }
  return "?";
}

namespace {
const char* dtypeText(uint8_t t) {
  return t < kernels::kNumDTypes ? kernels::dtypeName(static_cast<kernels::DType>(t)) : "?";
}
}  // namespace

std::string describe(const Signature& s) {
  std::string out = fmt::format("{} #{} count={} dtype={}", sched::collKindName(s.coll), s.seq, s.count, dtypeText(s.dtype));
  if (s.op != OpKind::None) out += fmt::format(" op={}", opKindName(s.op));
  if (s.root >= 0) out += fmt::format(" {}={}", (s.coll == sched::CollKind::Send || s.coll == sched::CollKind::Recv) ? "peer" : "root", s.root);
  return out;
}

std::string compareSignatures(const Signature& mine, int myRank, const Signature& theirs, int theirRank) {
  using sched::CollKind;
  bool p2p = mine.coll == CollKind::Recv;
  std::string diff;
  auto add = [&](const char* what, const std::string& a, const std::string& b) {
    diff += fmt::format("{}{} {} (rank {}) vs {} (rank {})", diff.empty() ? "" : ", ", what, b, theirRank, a, myRank);
  };
  if (p2p) {
    if (theirs.coll != CollKind::Send) add("call", sched::collKindName(mine.coll), sched::collKindName(theirs.coll));
  } else if (theirs.coll != mine.coll) {
    add("collective", sched::collKindName(mine.coll), sched::collKindName(theirs.coll));
  }
  if (!diff.empty()) return diff;
  if (theirs.seq != mine.seq) add("call number", std::to_string(mine.seq), std::to_string(theirs.seq));
  if (theirs.count != mine.count) add("count", std::to_string(mine.count), std::to_string(theirs.count));
  if (theirs.dtype != mine.dtype) add("dtype", dtypeText(mine.dtype), dtypeText(theirs.dtype));
  if (!p2p) {
    if (theirs.op != mine.op) add("op", opKindName(mine.op), opKindName(theirs.op));
    if (theirs.root != mine.root) add("root", std::to_string(mine.root), std::to_string(theirs.root));
    if (diff.empty() && theirs.algo != mine.algo)
      add("algorithm (different COLL_ALGO/COLL_* settings?)", sched::algoName(mine.algo), sched::algoName(theirs.algo));
  }
  return diff;
}

bool packSignature(const Signature& s, uint64_t words[2]) {
  if (s.root < -1 || s.root >= 0xffff) return false;
  words[0] = static_cast<uint64_t>(s.coll) | static_cast<uint64_t>(s.dtype) << 8 |
             static_cast<uint64_t>(s.op) << 16 | static_cast<uint64_t>(s.root + 1) << 24 |
             (s.seq & ((1ull << 23) - 1)) << 40 | 1ull << 63;
  words[1] = s.count;
  return true;
}

Signature unpackSignature(const uint64_t words[2]) {
  Signature s;
  s.coll = static_cast<sched::CollKind>(words[0] & 0xff);
  s.dtype = static_cast<uint8_t>(words[0] >> 8 & 0xff);
  s.op = static_cast<OpKind>(words[0] >> 16 & 0xff);
  s.root = static_cast<int32_t>(words[0] >> 24 & 0xffff) - 1;
  s.seq = words[0] >> 40 & ((1ull << 23) - 1);
  s.count = words[1];
  return s;
}

}  // namespace coll::exec
