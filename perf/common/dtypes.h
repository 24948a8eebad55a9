// dtypes.h — datatype and reduction-op tables shared by the perf tools and
// the multi-process checker: names as nccl-tests prints them, parsing of
// -d/-o values, and the exactness limits that data.h builds its values on.
#pragma once

#include <coll.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace collperf {

enum class NumKind : uint8_t { Signed, Unsigned, Float };

struct DtypeInfo {
  collDataType_t type;
  const char* name;   // as nccl-tests prints it: "int8", "half", "float", ...
  size_t size;        // bytes per element
  NumKind kind;
  // Largest M such that every integer in [-M, M] ([0, M] for unsigned
  // types) is exactly representable.  Sums whose partial sums stay within
  // M in magnitude are exact in any order.
  uint64_t exactLimit;
  // Largest k with 2^k finite in the type (and, for integers, <= exactLimit):
  // products of +-1/+-2 with at most k twos are exact in any order.
  int maxPow2;
};

constexpr int kNumDtypes = 12;
// Every datatype in collDataType_t order (the order "-d all" runs them).
extern const collDataType_t kAllDtypes[kNumDtypes];

const DtypeInfo& dtypeInfo(collDataType_t t);
inline size_t dtypeBytes(collDataType_t t) { return dtypeInfo(t).size; }
inline const char* dtypeLabel(collDataType_t t) { return dtypeInfo(t).name; }

// "int8", "uint8", "int32", "uint32", "int64", "uint64", "half"/"float16",
// "float"/"float32", "double"/"float64", "bfloat16", "f8e4m3", "f8e5m2",
// or "all".  Also accepts collDataType_t numbers.  False if unknown.
bool parseDtypes(const std::string& s, std::vector<collDataType_t>* out);

// The reduction ops the tools sweep.  PreMulSum is created per call with
// collRedOpCreatePreMulSum; None marks collectives without an op.
enum class RedOp : uint8_t { Sum = 0, Prod = 1, Max = 2, Min = 3, Avg = 4, PreMulSum = 5, None = 6 };
constexpr int kNumRedOps = 6;  // without None
extern const RedOp kAllRedOps[kNumRedOps];

// Names as nccl-tests prints them: sum prod max min avg mulsum none.
const char* redOpLabel(RedOp op);
// sum|prod|max|min|avg|premulsum (or mulsum)|all.  False if unknown.
bool parseRedOps(const std::string& s, std::vector<RedOp>* out);
// The built-in collRedOp_t for Sum..Avg (not PreMulSum / None).
collRedOp_t builtinOp(RedOp op);

}  // namespace collperf
