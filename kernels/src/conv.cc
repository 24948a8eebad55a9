// conv.cc — dtype names/sizes and the public scalar conversions.
#include "coll/kernels/reduce.h"
#include "coll/kernels/reduce_functors.h"

namespace coll::kernels {

size_t dtypeSize(DType t) {
  switch (t) {
    case DType::Int8: case DType::Uint8: case DType::Fp8E4M3: case DType::Fp8E5M2: return 1;
    case DType::Float16: case DType::Bfloat16: return 2;
    case DType::Int32: case DType::Uint32: case DType::Float32: return 4;
    case DType::Int64: case DType::Uint64: case DType::Float64: return 8;
  }
  return 0;
}

const char* dtypeName(DType t) {
  switch (t) {
    case DType::Int8: return "int8";
    case DType::Uint8: return "uint8";
    case DType::Int32: return "int32";
    case DType::Uint32: return "uint32";
    case DType::Int64: return "int64";
    case DType::Uint64: return "uint64";
    case DType::Float16: return "float16";
    case DType::Float32: return "float32";
    case DType::Float64: return "float64";
    case DType::Bfloat16: return "bfloat16";
    case DType::Fp8E4M3: return "f8e4m3";
    case DType::Fp8E5M2: return "f8e5m2";
  }
  return "unknown";
}

const char* opName(Op o) {
  switch (o) {
    case Op::Sum: return "sum";
    case Op::Prod: return "prod";
    case Op::Max: return "max";
    case Op::Min: return "min";
  }
  return "unknown";
}

uint16_t floatToHalf(float f) { return uint16_t(fn::narrow<fn::Fp16Format>(f)); }
float halfToFloat(uint16_t h) { return fn::widen<fn::Fp16Format>(h); }
uint16_t floatToBf16(float f) { return uint16_t(fn::narrow<fn::Bf16Format>(f)); }
float bf16ToFloat(uint16_t b) { return fn::widen<fn::Bf16Format>(b); }
uint8_t floatToE4M3(float f) { return uint8_t(fn::narrow<fn::E4M3Format>(f)); }
float e4m3ToFloat(uint8_t v) { return fn::widen<fn::E4M3Format>(v); }
uint8_t floatToE5M2(float f) { return uint8_t(fn::narrow<fn::E5M2Format>(f)); }
float e5m2ToFloat(uint8_t v) { return fn::widen<fn::E5M2Format>(v); }

}  // namespace coll::kernels
