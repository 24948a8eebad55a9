#include "element_codec.h"

#include <cmath>
#include <cstdint>
#include <cstring>

namespace ncclprog {

size_t elemBytes(ncclDataType_t t) {
  switch (t) {
    case ncclInt8: case ncclUint8: case ncclFloat8e4m3: case ncclFloat8e5m2: return 1;
    case ncclFloat16: case ncclBfloat16: return 2;
    case ncclInt32: case ncclUint32: case ncclFloat32: return 4;
    default: return 8;
  }
}

static uint16_t halfBits(float f) {  // a normal float with at most 11 significant bits
  uint32_t b;
  std::memcpy(&b, &f, 4);
  if (f == 0) return 0;
  uint32_t exp = ((b >> 23) & 0xff) - 127 + 15;
  return static_cast<uint16_t>(((b >> 16) & 0x8000) | (exp << 10) | ((b >> 13) & 0x3ff));
}
static float halfValue(uint16_t h) {
  if ((h & 0x7fff) == 0) return 0;
  uint32_t b = ((h & 0x8000u) << 16) | ((((h >> 10) & 0x1f) - 15 + 127) << 23) | ((h & 0x3ffu) << 13);
  float f;
  std::memcpy(&f, &b, 4);
  return f;
}

void encode(ncclDataType_t t, double v, void* out) {
  switch (t) {
    case ncclInt8: *static_cast<int8_t*>(out) = static_cast<int8_t>(v); break;
    case ncclUint8: *static_cast<uint8_t*>(out) = static_cast<uint8_t>(v); break;
    case ncclInt32: *static_cast<int32_t*>(out) = static_cast<int32_t>(v); break;
    case ncclUint32: *static_cast<uint32_t*>(out) = static_cast<uint32_t>(v); break;
    case ncclInt64: *static_cast<int64_t*>(out) = static_cast<int64_t>(v); break;
    case ncclUint64: *static_cast<uint64_t*>(out) = static_cast<uint64_t>(v); break;
    case ncclFloat32: *static_cast<float*>(out) = static_cast<float>(v); break;
    case ncclFloat64: *static_cast<double*>(out) = v; break;
    case ncclFloat16: {
      uint16_t h = halfBits(static_cast<float>(v));
      std::memcpy(out, &h, 2);
      break;
    }
    case ncclBfloat16: {
      float f = static_cast<float>(v);
      uint32_t b;
      std::memcpy(&b, &f, 4);
      uint16_t h = static_cast<uint16_t>(b >> 16);
      std::memcpy(out, &h, 2);
      break;
    }
    default: break;
  }
}

double decode(ncclDataType_t t, const void* in) {
  switch (t) {
    case ncclInt8: return *static_cast<const int8_t*>(in);
    case ncclUint8: return *static_cast<const uint8_t*>(in);
    case ncclInt32: return *static_cast<const int32_t*>(in);
    case ncclUint32: return *static_cast<const uint32_t*>(in);
    case ncclInt64: return static_cast<double>(*static_cast<const int64_t*>(in));
    case ncclUint64: return static_cast<double>(*static_cast<const uint64_t*>(in));
    case ncclFloat32: return *static_cast<const float*>(in);
    case ncclFloat64: return *static_cast<const double*>(in);
    case ncclFloat16: {
      uint16_t h;
      std::memcpy(&h, in, 2);
      return halfValue(h);
    }
    case ncclBfloat16: {
      uint16_t h;
      std::memcpy(&h, in, 2);
      uint32_t b = static_cast<uint32_t>(h) << 16;
      float f;
      std::memcpy(&f, &b, 4);
      return f;
    }
    default: return NAN;
  }
}

}  // namespace ncclprog
