// colls.h — one collective call as a test case: buffer layout (in-place and
// out-of-place, as nccl-tests lays them out), guarded buffers, filling,
// issuing through the C API, and bit-exact verification.  Shared by the perf
// tools (their -c check) and coll_mp_check.
#pragma once

#include "common/data.h"
#include "common/dtypes.h"

#include <coll.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace collperf {

enum class Coll : uint8_t { AllReduce, AllGather, Broadcast, ReduceScatter, Reduce, SendRecv };
constexpr int kNumColls = 6;

const char* collLabel(Coll c);  // "allreduce", "allgather", "broadcast", ...
bool collHasOp(Coll c);         // allreduce, reducescatter, reduce
bool collHasRoot(Coll c);       // broadcast, reduce
bool parseColl(const std::string& s, Coll* out);

// Element counts of one call.  `count` is the C API's count argument
// (all-gather: per-rank send count; reduce-scatter: per-rank recv count).
struct Layout {
  size_t sendCount = 0;  // elements in the send buffer
  size_t recvCount = 0;  // elements in the recv buffer
  size_t inplaceCount = 0;      // elements of the single in-place buffer
  size_t sendInplaceOffset = 0; // where sendbuff points into it (elements)
  size_t recvInplaceOffset = 0; // where recvbuff points into it (elements)
};
Layout layoutOf(Coll c, size_t count, int nranks, int rank);

// nccl-tests' conventions for a -b/-e size in bytes: the C API count, the
// "size" column (bytes, max of send and recv) and the algbw byte count.
struct PerfSizes {
  size_t count;       // the count argument (printed in the count column)
  size_t sizeBytes;   // size column
  size_t algBytes;    // algbw = algBytes / time
  double busFactor;   // busbw = algbw * busFactor
};
PerfSizes perfSizes(Coll c, size_t bytes, size_t esize, int nranks);

// A heap buffer with `guard` bytes of known pattern before and after.
class GuardedBuffer {
 public:
  static constexpr size_t kGuard = 256;
  GuardedBuffer() = default;
  ~GuardedBuffer();
  GuardedBuffer(const GuardedBuffer&) = delete;
  GuardedBuffer& operator=(const GuardedBuffer&) = delete;

  // Ensures capacity for `bytes` payload bytes (contents undefined).
  void reserve(size_t bytes);
  uint8_t* data() const { return base_ + kGuard; }
  size_t capacity() const { return cap_; }
  // Sets the guards around payload [0, bytes) to `pattern`.
  void setGuards(size_t bytes, uint8_t pattern);
  // Number of guard bytes (before payload, and after payload [0, bytes))
  // that differ from `pattern`.
  size_t checkGuards(size_t bytes, uint8_t pattern) const;

 private:
  uint8_t* base_ = nullptr;
  size_t cap_ = 0;
};

struct CaseSpec {
  Coll coll = Coll::AllReduce;
  collDataType_t dtype = collFloat32;
  RedOp op = RedOp::Sum;  // None for collectives without an op
  size_t count = 0;
  int root = 0;           // broadcast/reduce
  bool inplace = false;
  uint64_t seed = 1;      // must be the same on every rank
};

std::string describe(const CaseSpec& s);  // "allreduce float sum count 7 root 0 in-place"

struct Failure {
  int rank = 0;
  CaseSpec spec;
  std::string what;       // "output", "guard", "input modified", "non-root recvbuf", ...
  size_t index = 0;
  std::string expected, got;
};

// Buffers for one case; reuse across cases (they only grow).
struct CaseBuffers {
  GuardedBuffer send;
  GuardedBuffer recv;  // also the single buffer of in-place calls
};

struct RankInfo {
  collComm_t comm = nullptr;
  int rank = 0;
  int nranks = 1;
};

// Fills inputs, output sentinels and guards for `spec`.
void prepareCase(const RankInfo& ri, const CaseSpec& spec, CaseBuffers& bufs);
// The pointers to give the C API (in-place aliasing applied).
void casePointers(const RankInfo& ri, const CaseSpec& spec, CaseBuffers& bufs, const void** send,
                  void** recv);

// Creates the op (pre-mul sum: collRedOpCreatePreMulSum with the scalar
// data.h describes) — call releaseOp after the collective completed.
collResult_t acquireOp(const RankInfo& ri, const CaseSpec& spec, collRedOp_t* op);
collResult_t releaseOp(const RankInfo& ri, const CaseSpec& spec, collRedOp_t op);

// Issues the collective (send/recv: a ring step, rank r sends to r+1 and
// receives from r-1, wrapped in its own group, which nests).
collResult_t issueCase(const RankInfo& ri, const CaseSpec& spec, const void* send, void* recv,
                       collRedOp_t op);
// acquireOp + casePointers + issueCase + releaseOp.
collResult_t runCase(const RankInfo& ri, const CaseSpec& spec, CaseBuffers& bufs);

// Checks outputs, untouched regions, inputs and guards bit for bit.
// Returns the number of wrong elements (guard bytes count one each) and
// appends up to maxFailures records.
size_t verifyCase(const RankInfo& ri, const CaseSpec& spec, const CaseBuffers& bufs,
                  std::vector<Failure>* failures, size_t maxFailures);

// Prints "FAIL rank R <case>: <what> index I expected E got G".
std::string formatFailure(const Failure& f);

// Reports a library error and exits(1) (the launcher stops the others).
[[noreturn]] void dieOnCollError(const RankInfo& ri, collResult_t res, const char* what);

}  // namespace collperf
