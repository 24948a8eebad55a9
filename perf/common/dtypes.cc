#include "common/dtypes.h"

#include <cstdlib>
#include <cstring>
#include <strings.h>

namespace collperf {

namespace {

// The exact-integer limits: 2^(mantissa bits + 1) for the floating types.
const DtypeInfo kInfos[kNumDtypes] = {
    {collInt8, "int8", 1, NumKind::Signed, 127u, 6},
    {collUint8, "uint8", 1, NumKind::Unsigned, 255u, 7},
    {collInt32, "int32", 4, NumKind::Signed, 2147483647u, 30},
    {collUint32, "uint32", 4, NumKind::Unsigned, 4294967295u, 31},
    {collInt64, "int64", 8, NumKind::Signed, 9223372036854775807u, 62},
    {collUint64, "uint64", 8, NumKind::Unsigned, 18446744073709551615u, 63},
    {collFloat16, "half", 2, NumKind::Float, 1u << 11, 15},
    {collFloat32, "float", 4, NumKind::Float, 1u << 24, 127},
    {collFloat64, "double", 8, NumKind::Float, uint64_t(1) << 53, 1023},
    {collBfloat16, "bfloat16", 2, NumKind::Float, 1u << 8, 127},
    {collFloat8e4m3, "f8e4m3", 1, NumKind::Float, 1u << 4, 8},   // max 448
    {collFloat8e5m2, "f8e5m2", 1, NumKind::Float, 1u << 3, 15},  // max 57344
};

struct Alias {
  const char* name;
  collDataType_t type;
};
const Alias kAliases[] = {
    {"int8", collInt8},         {"char", collInt8},          {"uint8", collUint8},
    {"int32", collInt32},       {"int", collInt32},          {"uint32", collUint32},
    {"int64", collInt64},       {"uint64", collUint64},      {"half", collFloat16},
    {"float16", collFloat16},   {"fp16", collFloat16},       {"float", collFloat32},
    {"float32", collFloat32},   {"fp32", collFloat32},       {"double", collFloat64},
    {"float64", collFloat64},   {"fp64", collFloat64},       {"bfloat16", collBfloat16},
    {"bf16", collBfloat16},     {"f8e4m3", collFloat8e4m3},  {"fp8e4m3", collFloat8e4m3},
    {"float8e4m3", collFloat8e4m3}, {"f8e5m2", collFloat8e5m2}, {"fp8e5m2", collFloat8e5m2},
    {"float8e5m2", collFloat8e5m2},
};

}  // namespace

const collDataType_t kAllDtypes[kNumDtypes] = {
    collInt8,   collUint8,   collInt32,    collUint32,     collInt64,     collUint64,
    collFloat16, collFloat32, collFloat64, collBfloat16, collFloat8e4m3, collFloat8e5m2};

const RedOp kAllRedOps[kNumRedOps] = {RedOp::Sum, RedOp::Prod, RedOp::Max,
                                      RedOp::Min, RedOp::Avg,  RedOp::PreMulSum};

const DtypeInfo& dtypeInfo(collDataType_t t) {
  int i = static_cast<int>(t);
  if (i < 0 || i >= kNumDtypes) std::abort();
  return kInfos[i];
}

bool parseDtypes(const std::string& s, std::vector<collDataType_t>* out) {
  out->clear();
  if (s == "all") {
    out->assign(kAllDtypes, kAllDtypes + kNumDtypes);
    return true;
  }
  for (const Alias& a : kAliases) {
    if (strcasecmp(s.c_str(), a.name) == 0) {
      out->push_back(a.type);
      return true;
    }
  }
  char* end = nullptr;
  long v = std::strtol(s.c_str(), &end, 10);
  if (!s.empty() && end && *end == '\0' && v >= 0 && v < kNumDtypes) {
    out->push_back(static_cast<collDataType_t>(v));
    return true;
  }
  return false;
}

const char* redOpLabel(RedOp op) {
  switch (op) {
    case RedOp::Sum: return "sum";
    case RedOp::Prod: return "prod";
    case RedOp::Max: return "max";
    case RedOp::Min: return "min";
    case RedOp::Avg: return "avg";
    case RedOp::PreMulSum: return "mulsum";
    case RedOp::None: return "none";
  }
  return "?";
}

bool parseRedOps(const std::string& s, std::vector<RedOp>* out) {
  out->clear();
  if (s == "all") {
    out->assign(kAllRedOps, kAllRedOps + kNumRedOps);
    return true;
  }
  struct {
    const char* name;
    RedOp op;
  } const names[] = {{"sum", RedOp::Sum}, {"prod", RedOp::Prod},      {"max", RedOp::Max},
                     {"min", RedOp::Min}, {"avg", RedOp::Avg},        {"premulsum", RedOp::PreMulSum},
                     {"mulsum", RedOp::PreMulSum}};
  for (const auto& n : names) {
    if (strcasecmp(s.c_str(), n.name) == 0) {
      out->push_back(n.op);
      return true;
    }
  }
  return false;
}

collRedOp_t builtinOp(RedOp op) {
  switch (op) {
    case RedOp::Sum: return collSum;
    case RedOp::Prod: return collProd;
    case RedOp::Max: return collMax;
    case RedOp::Min: return collMin;
    case RedOp::Avg: return collAvg;
    default: return collSum;
  }
}

}  // namespace collperf
