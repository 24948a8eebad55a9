// msg_header.h — the signature every message carries in its slot header.
//
// The receiver compares it with its own call: ranks that disagree on the
// collective, count, dtype, op, root or algorithm get an error that names
// both ranks and both values, on the first message — NCCL would hang or
// return garbage.  It costs 64 bytes per chunk (< 0.05% at 256 KiB chunks).
#pragma once

#include <cstdint>
#include <string>

#include "coll/transport.h"
#include "schedule/schedules.h"

namespace coll::exec {

// Kinds of reduction as ranks must agree on them (a pre-mul sum's scalar
// may differ per rank, as in NCCL).
enum class OpKind : uint8_t { None = 0, Sum, Prod, Max, Min, Avg, PreMulSum };
const char* opKindName(OpKind k);

struct Signature {
  uint64_t seq = 0;    // per-comm collective number, or per-peer p2p number
  uint64_t count = 0;  // the API's count argument
  sched::CollKind coll = sched::CollKind::AllReduce;
  uint8_t dtype = 0;
  OpKind op = OpKind::None;
  sched::Algo algo = sched::Algo::Ring;
  int32_t root = -1;   // root, or -1
};

struct alignas(8) MsgHeader {
  Signature sig;
  uint32_t payloadBytes;
  uint32_t stepIndex;  // for diagnostics
  uint8_t checkOnly;   // COLL_CHECK=1 signature message, no payload
};
static_assert(sizeof(MsgHeader) <= transport::kSlotHeaderBytes);

// Empty if equal; else a sentence naming what differs, e.g. "count 100 (rank
// 2) vs 128 (rank 3)".  p2p (Send/Recv) matches Send against Recv.
std::string compareSignatures(const Signature& mine, int myRank, const Signature& theirs, int theirRank);
std::string describe(const Signature& s);

// The signature in two 64-bit words, for the device path, whose kernels
// compare them (transports/p2p/flag_sync.cuh): word 0 = coll | dtype << 8 | op << 16 |
// (root + 1) << 24 (16 bits) | (seq mod 2^23) << 40 | 1 << 63, word 1 = count.
// The algorithm is not carried (the device path has one per collective);
// roots >= 65535 do not fit and are refused (false).
bool packSignature(const Signature& s, uint64_t words[2]);
Signature unpackSignature(const uint64_t words[2]);

}  // namespace coll::exec
