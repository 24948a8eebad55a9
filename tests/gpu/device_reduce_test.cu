// device_reduce_test — the CUDA reduction kernels against the host kernels,
// bit for bit (plain C++ + CUDA runtime: no test framework, so it builds
// with only the CUDA toolkit and a compiler; see tools/gpu-check.sh).
//
//   coll_device_reduce_test [--small] [--no-async] [--seed N] [--verbose]
//
// Exit 0: all passed; 1: a failure (each is printed); 77: no CUDA device
// (ctest SKIP_RETURN_CODE); 2: bad arguments.
//
// What it checks:
//  1. conversions: the hardware fp16/bf16 conversions the kernels use equal
//     the shared integer conversions (reduce_functors.h) for every float bit
//     pattern (a sample with --small), and the device build of the shared
//     conversions equals the host build;
//  2. argument errors (bad dtype/op, misaligned, partial overlap, null);
//  3. asynchrony and stream order: with a kernel blocking the stream, the
//     call returns at once, the stream is not ready, dst is untouched; after
//     the blocker is released, an event recorded after the call completes
//     and the result is there;
//  4. every dtype x op variant (sum, prod, max, min, avg, pre-mul sum with a
//     host or a device scalar, copy/scale without a, in place, the ReduceFn
//     overload) x counts {0,1,2,3,7,15,16,17,1000003,4096*1024+5} x byte
//     offsets of dst/a/b (0..15, element-aligned; same and different
//     misalignments): the device result equals coll::kernels::reduce()'s
//     bytes exactly, and 64 guard bytes before and after dst are untouched.
//     --small: fewer counts and offsets (for compute-sanitizer).
#include <cuda_runtime.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "coll/device_reduce.h"
#include "coll/kernel_launch.h"
#include "coll/kernels/reduce.h"
#include "coll/kernels/reduce_functors.h"
#include "device_elem.cuh"

namespace ck = coll::kernels;
namespace fn = coll::kernels::fn;
namespace dev = coll::kernels::device;

namespace {

int g_failures = 0;
long g_cases = 0;

#define CUDA_OK(call)                                                                               \
  do {                                                                                              \
    cudaError_t e_ = (call);                                                                        \
    if (e_ != cudaSuccess) {                                                                        \
      fprintf(stderr, "FATAL %s:%d: %s -> %s\n", __FILE__, __LINE__, #call, cudaGetErrorString(e_)); \
      exit(1);                                                                                      \
    }                                                                                               \
  } while (0)

#define EXPECT(cond, ...)                                                  \
  do {                                                                     \
    if (!(cond)) {                                                         \
      ++g_failures;                                                        \
      fprintf(stderr, "FAIL %s:%d: %s: ", __FILE__, __LINE__, #cond);      \
      fprintf(stderr, __VA_ARGS__);                                        \
      fputc('\n', stderr);                                                 \
    }                                                                      \
  } while (0)

struct Options {
  bool small = false;
  bool async = true;
  bool verbose = false;
  uint64_t seed = 20240917;
};

// ------------------------------------------------------------ 1. conversions

__global__ void narrowSweepKernel(uint64_t count, uint64_t step, uint64_t offset, unsigned long long* mism,
                                  unsigned* first) {
  const uint64_t stride = uint64_t(gridDim.x) * blockDim.x;
  for (uint64_t k = uint64_t(blockIdx.x) * blockDim.x + threadIdx.x; k < count; k += stride) {
    const uint32_t bits = uint32_t(offset + k * step);
    const float f = __uint_as_float(bits);
    if (dev::HwHalfElem::store(f) != uint16_t(fn::narrowCanonical<fn::Fp16Format>(f))) {
      atomicAdd(&mism[0], 1ull);
      atomicMin(&first[0], bits);
    }
    if (dev::HwBf16Elem::store(f) != uint16_t(fn::narrowCanonical<fn::Bf16Format>(f))) {
      atomicAdd(&mism[1], 1ull);
      atomicMin(&first[1], bits);
    }
  }
}

// Every 16-bit code: hardware widen vs the shared widen (NaN: any NaN).
__global__ void widenKernel(unsigned long long* mism, unsigned* first) {
  const uint32_t code = blockIdx.x * blockDim.x + threadIdx.x;
  if (code >= 65536u) return;
  const float h1 = dev::HwHalfElem::load(uint16_t(code)), h2 = fn::widen<fn::Fp16Format>(code);
  if (!(fn::bitsOf(h1) == fn::bitsOf(h2) || (fn::isNaN(h1) && fn::isNaN(h2)))) {
    atomicAdd(&mism[2], 1ull);
    atomicMin(&first[2], code);
  }
  const float b1 = dev::HwBf16Elem::load(uint16_t(code)), b2 = fn::widen<fn::Bf16Format>(code);
  if (!(fn::bitsOf(b1) == fn::bitsOf(b2) || (fn::isNaN(b1) && fn::isNaN(b2)))) {
    atomicAdd(&mism[3], 1ull);
    atomicMin(&first[3], code);
  }
}

// The shared conversions compiled for the device, to compare with the host.
__global__ void softConvKernel(const uint32_t* in, size_t n, uint32_t* narrowOut, uint32_t* widenOut) {
  const size_t stride = size_t(gridDim.x) * blockDim.x;
  for (size_t i = size_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride) {
    const float f = __uint_as_float(in[i]);
    narrowOut[4 * i + 0] = fn::narrowCanonical<fn::Fp16Format>(f);
    narrowOut[4 * i + 1] = fn::narrowCanonical<fn::Bf16Format>(f);
    narrowOut[4 * i + 2] = fn::narrowCanonical<fn::E4M3Format>(f);
    narrowOut[4 * i + 3] = fn::narrowCanonical<fn::E5M2Format>(f);
    widenOut[4 * i + 0] = fn::bitsOf(fn::widen<fn::Fp16Format>(in[i] & 0xffffu));
    widenOut[4 * i + 1] = fn::bitsOf(fn::widen<fn::Bf16Format>(in[i] & 0xffffu));
    widenOut[4 * i + 2] = fn::bitsOf(fn::widen<fn::E4M3Format>(in[i] & 0xffu));
    widenOut[4 * i + 3] = fn::bitsOf(fn::widen<fn::E5M2Format>(in[i] & 0xffu));
  }
}

void testConversions(const Options& o, std::mt19937_64& rng) {
  unsigned long long* mism = nullptr;
  unsigned* first = nullptr;
  CUDA_OK(cudaMalloc(&mism, 4 * sizeof *mism));
  CUDA_OK(cudaMalloc(&first, 4 * sizeof *first));
  CUDA_OK(cudaMemset(mism, 0, 4 * sizeof *mism));
  CUDA_OK(cudaMemset(first, 0xff, 4 * sizeof *first));
  // Full: all 2^32 patterns.  Small: 2^20 patterns spread over the range.
  const uint64_t count = o.small ? (1ull << 20) : (1ull << 32);
  const uint64_t step = o.small ? 4099 : 1;
  CUDA_OK(coll::cuda::launch(narrowSweepKernel, dim3(1024), dim3(256), 0, nullptr, count, step, 0, mism, first));
  CUDA_OK(cudaGetLastError());
  CUDA_OK(coll::cuda::launch(widenKernel, dim3(256), dim3(256), 0, nullptr, mism, first));
  CUDA_OK(cudaGetLastError());
  unsigned long long hm[4];
  unsigned hf[4];
  CUDA_OK(cudaMemcpy(hm, mism, sizeof hm, cudaMemcpyDeviceToHost));
  CUDA_OK(cudaMemcpy(hf, first, sizeof hf, cudaMemcpyDeviceToHost));
  EXPECT(hm[0] == 0, "fp16 hardware narrow differs from the shared one for %llu patterns (first 0x%08x)", hm[0], hf[0]);
  EXPECT(hm[1] == 0, "bf16 hardware narrow differs from the shared one for %llu patterns (first 0x%08x)", hm[1], hf[1]);
  EXPECT(hm[2] == 0, "fp16 hardware widen differs for %llu codes (first 0x%04x)", hm[2], hf[2]);
  EXPECT(hm[3] == 0, "bf16 widen differs for %llu codes (first 0x%04x)", hm[3], hf[3]);
  CUDA_OK(cudaFree(mism));
  CUDA_OK(cudaFree(first));

  // Shared conversions: device build == host build.
  const size_t n = o.small ? (1u << 14) : (1u << 22);
  std::vector<uint32_t> in(n), nd(4 * n), wd(4 * n);
  const uint32_t edges[] = {0u, 0x80000000u, 0x7f800000u, 0xff800000u, 0x7fc00000u, 0x7f800001u, 0x00000001u,
                            0x33800000u, 0x33000001u, 0x477fefffu, 0x477ff000u, 0x43e00000u, 0x43e80000u,
                            0x47600000u, 0x47700000u, 0x3b800000u, 0x387fc000u, 0x7f7fffffu};
  for (size_t i = 0; i < n; ++i) {
    if (i < sizeof edges / sizeof edges[0]) in[i] = edges[i];
    else if (i % 3 == 0) in[i] = uint32_t(rng());
    else {
      // Biased toward the small formats' ranges (exponents 100..160).
      in[i] = (uint32_t(rng()) & 0x807fffffu) | (uint32_t(100 + rng() % 61) << 23);
    }
  }
  uint32_t *din = nullptr, *dn = nullptr, *dw = nullptr;
  CUDA_OK(cudaMalloc(&din, n * 4));
  CUDA_OK(cudaMalloc(&dn, 4 * n * 4));
  CUDA_OK(cudaMalloc(&dw, 4 * n * 4));
  CUDA_OK(cudaMemcpy(din, in.data(), n * 4, cudaMemcpyHostToDevice));
  CUDA_OK(coll::cuda::launch(softConvKernel, dim3(256), dim3(256), 0, nullptr, din, n, dn, dw));
  CUDA_OK(cudaGetLastError());
  CUDA_OK(cudaMemcpy(nd.data(), dn, 4 * n * 4, cudaMemcpyDeviceToHost));
  CUDA_OK(cudaMemcpy(wd.data(), dw, 4 * n * 4, cudaMemcpyDeviceToHost));
  int bad = 0;
  for (size_t i = 0; i < n && bad < 10; ++i) {
    const float f = fn::floatOf(in[i]);
    const uint32_t hn[4] = {fn::narrowCanonical<fn::Fp16Format>(f), fn::narrowCanonical<fn::Bf16Format>(f),
                            fn::narrowCanonical<fn::E4M3Format>(f), fn::narrowCanonical<fn::E5M2Format>(f)};
    const uint32_t hw[4] = {fn::bitsOf(fn::widen<fn::Fp16Format>(in[i] & 0xffffu)),
                            fn::bitsOf(fn::widen<fn::Bf16Format>(in[i] & 0xffffu)),
                            fn::bitsOf(fn::widen<fn::E4M3Format>(in[i] & 0xffu)),
                            fn::bitsOf(fn::widen<fn::E5M2Format>(in[i] & 0xffu))};
    for (int k = 0; k < 4; ++k) {
      if (hn[k] != nd[4 * i + k] || hw[k] != wd[4 * i + k]) {
        ++bad;
        EXPECT(false, "shared conversion %d differs device/host for 0x%08x: narrow %x/%x widen %08x/%08x", k, in[i],
               nd[4 * i + k], hn[k], wd[4 * i + k], hw[k]);
      }
    }
  }
  CUDA_OK(cudaFree(din));
  CUDA_OK(cudaFree(dn));
  CUDA_OK(cudaFree(dw));
  printf("conversions: %s (%llu narrow patterns, 65536 widen codes, %zu device-vs-host samples)\n",
         bad == 0 && hm[0] + hm[1] + hm[2] + hm[3] == 0 ? "ok" : "FAILED", (unsigned long long)count, n);
}

// --------------------------------------------------------------- helpers

bool isFloat(ck::DType t) {
  switch (t) {
    case ck::DType::Float16: case ck::DType::Float32: case ck::DType::Float64: case ck::DType::Bfloat16:
    case ck::DType::Fp8E4M3: case ck::DType::Fp8E5M2: return true;
    default: return false;
  }
}
bool isSigned(ck::DType t) { return t == ck::DType::Int8 || t == ck::DType::Int32 || t == ck::DType::Int64; }

float moderate(std::mt19937_64& rng, int minExp, int maxExp) {
  const float mant = 1.0f + float(rng() & 0xffffff) / float(1 << 24);
  const float v = std::ldexp(mant, minExp + int(rng() % uint64_t(maxExp - minExp + 1)));
  return (rng() & 1) ? -v : v;
}

template <class T> void fillInt(T* p, size_t n, std::mt19937_64& rng) {
  const T edges[] = {std::numeric_limits<T>::min(), std::numeric_limits<T>::max(), T(0), T(1), T(-1), T(2)};
  for (size_t i = 0; i < n; ++i) p[i] = (rng() % 8 == 0) ? edges[rng() % 6] : T(rng());
}

// Finite values (no NaN, no inf), negatives, subnormals; fp8 over its whole
// finite range.
void fillRandom(ck::DType t, void* p, size_t n, std::mt19937_64& rng) {
  switch (t) {
    case ck::DType::Int8: return fillInt(static_cast<int8_t*>(p), n, rng);
    case ck::DType::Uint8: return fillInt(static_cast<uint8_t*>(p), n, rng);
    case ck::DType::Int32: return fillInt(static_cast<int32_t*>(p), n, rng);
    case ck::DType::Uint32: return fillInt(static_cast<uint32_t*>(p), n, rng);
    case ck::DType::Int64: return fillInt(static_cast<int64_t*>(p), n, rng);
    case ck::DType::Uint64: return fillInt(static_cast<uint64_t*>(p), n, rng);
    case ck::DType::Float32: {
      float* q = static_cast<float*>(p);
      for (size_t i = 0; i < n; ++i) {
        const unsigned r = unsigned(rng() % 16);
        uint32_t bits;
        if (r < 9) q[i] = moderate(rng, -20, 20);
        else if (r < 11) q[i] = float(int(rng() % 21) - 10);
        else if (r == 11) q[i] = (rng() & 1) ? -0.0f : 0.0f;
        else if (r == 12) q[i] = fn::floatOf(uint32_t(rng() & 0x807fffffu));  // subnormal
        else {
          do bits = uint32_t(rng()); while ((bits & 0x7f800000u) == 0x7f800000u);
          q[i] = fn::floatOf(bits);
        }
      }
      return;
    }
    case ck::DType::Float64: {
      double* q = static_cast<double*>(p);
      for (size_t i = 0; i < n; ++i) {
        const unsigned r = unsigned(rng() % 16);
        uint64_t bits;
        if (r < 9) q[i] = double(moderate(rng, -20, 20)) * (1.0 + double(rng() % 1000) * 1e-9);
        else if (r < 11) q[i] = double(int(rng() % 21) - 10);
        else if (r == 11) q[i] = (rng() & 1) ? -0.0 : 0.0;
        else if (r == 12) q[i] = fn::doubleOf(rng() & 0x800fffffffffffffull);
        else {
          do bits = rng(); while ((bits & 0x7ff0000000000000ull) == 0x7ff0000000000000ull);
          q[i] = fn::doubleOf(bits);
        }
      }
      return;
    }
    case ck::DType::Float16:
    case ck::DType::Bfloat16: {
      uint16_t* q = static_cast<uint16_t*>(p);
      const bool half = t == ck::DType::Float16;
      const uint16_t expMask = half ? 0x7c00 : 0x7f80;
      for (size_t i = 0; i < n; ++i) {
        uint16_t v;
        if (rng() & 1) {
          do v = uint16_t(rng()); while ((v & expMask) == expMask);
        } else {
          v = half ? ck::floatToHalf(moderate(rng, -16, 14)) : ck::floatToBf16(moderate(rng, -40, 40));
        }
        q[i] = v;
      }
      return;
    }
    case ck::DType::Fp8E4M3: {
      uint8_t* q = static_cast<uint8_t*>(p);
      for (size_t i = 0; i < n; ++i) {
        uint8_t v;
        do v = uint8_t(rng()); while ((v & 0x7f) == 0x7f);
        q[i] = v;
      }
      return;
    }
    case ck::DType::Fp8E5M2: {
      uint8_t* q = static_cast<uint8_t*>(p);
      for (size_t i = 0; i < n; ++i) {
        uint8_t v;
        do v = uint8_t(rng()); while ((v & 0x7c) == 0x7c);
        q[i] = v;
      }
      return;
    }
  }
}

// One element in storage format -> the kernels' scalar domain, as libcoll
// reads a device-resident pre-mul scalar (core/redop_table.cc).
ck::Scalar scalarFromElement(ck::DType t, const void* p) {
  ck::Scalar s{};
  switch (t) {
    case ck::DType::Int8: { int8_t v; memcpy(&v, p, 1); s.i = v; break; }
    case ck::DType::Uint8: { uint8_t v; memcpy(&v, p, 1); s.u = v; break; }
    case ck::DType::Int32: { int32_t v; memcpy(&v, p, 4); s.i = v; break; }
    case ck::DType::Uint32: { uint32_t v; memcpy(&v, p, 4); s.u = v; break; }
    case ck::DType::Int64: { int64_t v; memcpy(&v, p, 8); s.i = v; break; }
    case ck::DType::Uint64: { uint64_t v; memcpy(&v, p, 8); s.u = v; break; }
    case ck::DType::Float16: { uint16_t v; memcpy(&v, p, 2); s.f = ck::halfToFloat(v); break; }
    case ck::DType::Float32: { float v; memcpy(&v, p, 4); s.f = v; break; }
    case ck::DType::Float64: { double v; memcpy(&v, p, 8); s.f = v; break; }
    case ck::DType::Bfloat16: { uint16_t v; memcpy(&v, p, 2); s.f = ck::bf16ToFloat(v); break; }
    case ck::DType::Fp8E4M3: { uint8_t v; memcpy(&v, p, 1); s.f = ck::e4m3ToFloat(v); break; }
    case ck::DType::Fp8E5M2: { uint8_t v; memcpy(&v, p, 1); s.f = ck::e5m2ToFloat(v); break; }
  }
  return s;
}

ck::Scalar randomHostScalar(ck::DType t, std::mt19937_64& rng) {
  ck::Scalar s{};
  if (isFloat(t)) {
    static const double kVals[] = {0.7, -1.5, 3.0, 1.0 / 3.0, 0.001, -0.1, 2.0};
    s.f = kVals[rng() % (sizeof kVals / sizeof kVals[0])];
  } else if (isSigned(t)) {
    s.i = (rng() & 1) ? int64_t(rng() % 15) - 7 : int64_t(rng());
  } else {
    s.u = (rng() & 1) ? rng() % 9 : rng();
  }
  return s;
}

// A device-scalar value in storage format (finite).
void randomElementScalar(ck::DType t, void* out, std::mt19937_64& rng) {
  if (isFloat(t)) {
    static const float kVals[] = {0.75f, -1.5f, 3.0f, 0.3333f, -0.125f, 1.25f};
    const float f = kVals[rng() % (sizeof kVals / sizeof kVals[0])];
    switch (t) {
      case ck::DType::Float16: { uint16_t v = ck::floatToHalf(f); memcpy(out, &v, 2); break; }
      case ck::DType::Bfloat16: { uint16_t v = ck::floatToBf16(f); memcpy(out, &v, 2); break; }
      case ck::DType::Fp8E4M3: { uint8_t v = ck::floatToE4M3(f); memcpy(out, &v, 1); break; }
      case ck::DType::Fp8E5M2: { uint8_t v = ck::floatToE5M2(f); memcpy(out, &v, 1); break; }
      case ck::DType::Float32: memcpy(out, &f, 4); break;
      default: { double d = double(f) * 1.0000001; memcpy(out, &d, 8); break; }
    }
  } else {
    fillRandom(t, out, 1, rng);
  }
}

// ----------------------------------------------------------- 2. arguments

void testArguments() {
  void* buf = nullptr;
  CUDA_OK(cudaMalloc(&buf, 4096));
  char* p = static_cast<char*>(buf);
  const auto none = ck::ScalarArg::none();
  EXPECT(ck::collDeviceReduce(nullptr, nullptr, nullptr, 0, ck::DType::Float32, ck::Op::Sum, none, 0) == cudaSuccess,
         "count 0 must be a no-op");
  EXPECT(ck::collDeviceReduce(p, p + 1024, p + 2048, 16, ck::DType(12), ck::Op::Sum, none, 0) == cudaErrorInvalidValue,
         "bad dtype");
  EXPECT(ck::collDeviceReduce(p, p + 1024, p + 2048, 16, ck::DType::Float32, ck::Op(4), none, 0) ==
             cudaErrorInvalidValue, "bad op");
  EXPECT(ck::collDeviceReduce(p + 1, p + 1024, p + 2048, 16, ck::DType::Float32, ck::Op::Sum, none, 0) ==
             cudaErrorMisalignedAddress, "misaligned dst");
  EXPECT(ck::collDeviceReduce(p, p + 1026, p + 2048, 16, ck::DType::Float32, ck::Op::Sum, none, 0) ==
             cudaErrorMisalignedAddress, "misaligned a");
  EXPECT(ck::collDeviceReduce(p, p + 8, p + 2048, 16, ck::DType::Float32, ck::Op::Sum, none, 0) ==
             cudaErrorInvalidValue, "partial overlap");
  EXPECT(ck::collDeviceReduce(nullptr, p, p + 2048, 16, ck::DType::Float32, ck::Op::Sum, none, 0) ==
             cudaErrorInvalidValue, "null dst");
  EXPECT(ck::collDeviceReduce(p, p + 1024, p + 2048, 16, ck::DType::Float32, ck::Op::Sum,
                              ck::ScalarArg::deviceScalar(nullptr), 0) == cudaErrorInvalidValue,
         "null device scalar");
  EXPECT(cudaGetLastError() == cudaSuccess, "argument errors must not leave a sticky CUDA error");
  CUDA_OK(cudaDeviceSynchronize());
  CUDA_OK(cudaFree(buf));
  printf("arguments: done\n");
}

// ------------------------------------------------- 3. async / stream order

// Blocks its stream until *flag != 0 (host-mapped memory) or timeoutNs.
__global__ void spinKernel(volatile unsigned* flag, unsigned long long timeoutNs, unsigned* timedOut) {
  unsigned long long start, now;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(start));
  for (;;) {
    if (*flag != 0) return;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(now));
    if (now - start > timeoutNs) {
      *timedOut = 1;
      return;
    }
    __nanosleep(1000);
  }
}

void testAsync(std::mt19937_64& rng) {
  const size_t n = 1 << 20;
  const size_t bytes = n * sizeof(float);
  std::vector<float> ha(n), hb(n), ref(n), got(n);
  fillRandom(ck::DType::Float32, ha.data(), n, rng);
  fillRandom(ck::DType::Float32, hb.data(), n, rng);
  ck::ReduceFn f;
  f.dtype = ck::DType::Float32;
  f.op = ck::Op::Sum;
  ck::reduce(f, ref.data(), ha.data(), hb.data(), n, false, false);

  float *a, *b, *d;
  CUDA_OK(cudaMalloc(&a, bytes));
  CUDA_OK(cudaMalloc(&b, bytes));
  CUDA_OK(cudaMalloc(&d, bytes));
  CUDA_OK(cudaMemcpy(a, ha.data(), bytes, cudaMemcpyHostToDevice));
  CUDA_OK(cudaMemcpy(b, hb.data(), bytes, cudaMemcpyHostToDevice));
  CUDA_OK(cudaMemset(d, 0xA5, bytes));
  unsigned* hflag = nullptr;
  CUDA_OK(cudaHostAlloc(&hflag, 2 * sizeof(unsigned), cudaHostAllocMapped));
  hflag[0] = 0;
  hflag[1] = 0;
  unsigned* dflag = nullptr;
  CUDA_OK(cudaHostGetDevicePointer(reinterpret_cast<void**>(&dflag), hflag, 0));
  cudaStream_t s, other;
  CUDA_OK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  CUDA_OK(cudaStreamCreateWithFlags(&other, cudaStreamNonBlocking));
  cudaEvent_t done;
  CUDA_OK(cudaEventCreateWithFlags(&done, cudaEventDisableTiming));
  CUDA_OK(cudaDeviceSynchronize());

  // Warm-up: the same call once, so that lazy module loading (CUDA's
  // default), which may synchronise the context, is not needed while the
  // spinning kernel holds the device; the same for the spinner itself.
  hflag[0] = 1;
  CUDA_OK(coll::cuda::launch(spinKernel, dim3(1), dim3(1), 0, s, dflag, 1000, dflag + 1));
  CUDA_OK(ck::collDeviceReduce(d, a, b, n, ck::DType::Float32, ck::Op::Sum, ck::ScalarArg::none(), s));
  CUDA_OK(cudaStreamSynchronize(s));
  hflag[0] = 0;
  hflag[1] = 0;
  CUDA_OK(cudaMemset(d, 0xA5, bytes));
  CUDA_OK(cudaDeviceSynchronize());

  const unsigned long long kTimeoutNs = 20ull * 1000 * 1000 * 1000;
  CUDA_OK(coll::cuda::launch(spinKernel, dim3(1), dim3(1), 0, s, dflag, kTimeoutNs, dflag + 1));
  CUDA_OK(cudaGetLastError());
  const auto t0 = std::chrono::steady_clock::now();
  const cudaError_t err = ck::collDeviceReduce(d, a, b, n, ck::DType::Float32, ck::Op::Sum, ck::ScalarArg::none(), s);
  const auto t1 = std::chrono::steady_clock::now();
  const cudaError_t q = cudaStreamQuery(s);
  CUDA_OK(cudaEventRecord(done, s));
  const cudaError_t eq = cudaEventQuery(done);
  const double callMs = std::chrono::duration<double, std::milli>(t1 - t0).count();
  EXPECT(err == cudaSuccess, "collDeviceReduce behind a blocked stream: %s", cudaGetErrorString(err));
  EXPECT(callMs < 2000.0, "collDeviceReduce took %.1f ms: it waited for the stream", callMs);
  EXPECT(q == cudaErrorNotReady, "cudaStreamQuery right after the call: %s (want cudaErrorNotReady)",
         cudaGetErrorString(q));
  EXPECT(eq == cudaErrorNotReady, "event after the call already complete: %s", cudaGetErrorString(eq));
  // While the stream is blocked, dst must be untouched (read on another stream).
  CUDA_OK(cudaMemcpyAsync(got.data(), d, bytes, cudaMemcpyDeviceToHost, other));
  CUDA_OK(cudaStreamSynchronize(other));
  bool untouched = true;
  for (size_t i = 0; i < n && untouched; ++i) untouched = fn::bitsOf(got[i]) == 0xA5A5A5A5u;
  EXPECT(untouched, "dst was written before the preceding kernel on the stream finished");

  // Release the blocker; the event after the reduce completes with the result.
  __atomic_store_n(&hflag[0], 1u, __ATOMIC_SEQ_CST);
  CUDA_OK(cudaEventSynchronize(done));
  EXPECT(hflag[1] == 0, "the blocking kernel timed out (the flag write never reached the GPU?)");
  CUDA_OK(cudaMemcpy(got.data(), d, bytes, cudaMemcpyDeviceToHost));
  EXPECT(memcmp(got.data(), ref.data(), bytes) == 0, "result after the event differs from the host reference");
  printf("async: call returned in %.3f ms with the stream blocked; stream query %s; result ok after event\n", callMs,
         cudaGetErrorName(q));

  CUDA_OK(cudaEventDestroy(done));
  CUDA_OK(cudaStreamDestroy(s));
  CUDA_OK(cudaStreamDestroy(other));
  CUDA_OK(cudaFreeHost(hflag));
  CUDA_OK(cudaFree(a));
  CUDA_OK(cudaFree(b));
  CUDA_OK(cudaFree(d));
}

// ------------------------------------------------------------ 4. matrix

struct Variant {
  const char* name;
  ck::Op op;
  bool hasA;
  int pre;            // 0 none, 1 host scalar, 2 device scalar
  uint64_t divisor;   // avg
  int inplace;        // 0 no, 1 dst == a, 2 dst == b
  bool useFn;         // the ReduceFn overload
  bool applyPre = true, applyPost = true;  // (ReduceFn overload only)
};

const Variant kVariants[] = {
    {"sum", ck::Op::Sum, true, 0, 0, 0, false},
    {"prod", ck::Op::Prod, true, 0, 0, 0, false},
    {"max", ck::Op::Max, true, 0, 0, 0, false},
    {"min", ck::Op::Min, true, 0, 0, 0, false},
    {"avg(3)", ck::Op::Sum, true, 0, 3, 0, false},
    {"avg(8)", ck::Op::Sum, true, 0, 8, 0, false},
    {"premulsum(host)", ck::Op::Sum, true, 1, 0, 0, false},
    {"premulsum(device)", ck::Op::Sum, true, 2, 0, 0, false},
    {"premulsum(device)+avg(5) fn", ck::Op::Sum, true, 2, 5, 0, true},
    {"premulsum(host) fn, pre off", ck::Op::Sum, true, 1, 6, 0, true, false, true},
    {"max fn, post off", ck::Op::Max, true, 0, 4, 0, true, true, false},
    {"copy (a=null)", ck::Op::Sum, false, 0, 0, 0, false},
    {"scale(host) (a=null)", ck::Op::Sum, false, 1, 0, 0, false},
    {"scale(device)/7 (a=null) fn", ck::Op::Sum, false, 2, 7, 0, true},
    {"sum in place dst=a", ck::Op::Sum, true, 0, 0, 1, false},
    {"min in place dst=b", ck::Op::Min, true, 0, 0, 2, false},
};

struct Offsets {
  size_t d, a, b;
};

struct Buffers {
  static constexpr size_t kGuard = 64;
  size_t maxCount = 0;
  unsigned char* a = nullptr;  // device inputs (+16 bytes of offset room)
  unsigned char* b = nullptr;
  unsigned char* d = nullptr;  // device dst: guard + 16 + data + guard
  unsigned char* scalar = nullptr;
  unsigned char* got = nullptr;  // pinned host copy of d
  std::vector<unsigned char> ha, hb, ref;
};

const char* dtypeStr(ck::DType t) { return ck::dtypeName(t); }

void runCase(ck::DType t, const Variant& v, size_t count, Offsets off, Buffers& B, cudaStream_t s,
             std::mt19937_64& rng, const Options& o) {
  const size_t es = ck::dtypeSize(t), bytes = count * es, G = Buffers::kGuard;
  if (v.inplace == 1) off.a = off.d;
  if (v.inplace == 2) off.b = off.d;
  unsigned char* dst = B.d + G + off.d;
  const unsigned char* a = v.hasA ? B.a + off.a : nullptr;
  const unsigned char* b = B.b + off.b;

  // Scalars: a host value, or one element at an (element-aligned, odd-ish)
  // device address.
  ck::Scalar hostScalar = randomHostScalar(t, rng);
  unsigned char elem[8] = {};
  randomElementScalar(t, elem, rng);
  unsigned char* devScalar = B.scalar + 8 + ((rng() % 4) * es) % 32;
  CUDA_OK(cudaMemcpyAsync(devScalar, elem, es, cudaMemcpyHostToDevice, s));

  const size_t span = G + off.d + bytes + G;
  CUDA_OK(cudaMemsetAsync(B.d, 0xA5, span, s));
  if (v.inplace == 1) {
    CUDA_OK(cudaMemcpyAsync(dst, B.a + off.a, bytes, cudaMemcpyDeviceToDevice, s));
    a = dst;
  }
  if (v.inplace == 2) {
    CUDA_OK(cudaMemcpyAsync(dst, B.b + off.b, bytes, cudaMemcpyDeviceToDevice, s));
    b = dst;
  }

  // Host reference (on the host copies of the same inputs).
  ck::ReduceFn f;
  f.dtype = t;
  f.op = v.op;
  f.premul = v.pre != 0;
  f.scalar = v.pre == 2 ? scalarFromElement(t, elem) : hostScalar;
  f.divisor = v.divisor;
  const bool applyPre = v.useFn ? v.applyPre : true, applyPost = v.useFn ? v.applyPost : true;
  if (count > 0)
    ck::reduce(f, B.ref.data(), v.hasA ? B.ha.data() + off.a : nullptr, B.hb.data() + off.b, count, applyPre,
               applyPost);

  cudaError_t err;
  if (v.useFn) {
    err = ck::collDeviceReduce(f, dst, a, b, count, applyPre, applyPost, v.pre == 2 ? devScalar : nullptr, s);
  } else {
    ck::ScalarArg sa = v.pre == 1   ? ck::ScalarArg::hostScalar(hostScalar)
                       : v.pre == 2 ? ck::ScalarArg::deviceScalar(devScalar)
                                    : ck::ScalarArg::none();
    sa.divisor = v.divisor;
    err = ck::collDeviceReduce(dst, a, b, count, t, v.op, sa, s);
  }
  ++g_cases;
  if (err != cudaSuccess) {
    EXPECT(false, "%s %s n=%zu offsets d=%zu a=%zu b=%zu: %s", dtypeStr(t), v.name, count, off.d, off.a, off.b,
           cudaGetErrorString(err));
    return;
  }
  CUDA_OK(cudaMemcpyAsync(B.got, B.d, span, cudaMemcpyDeviceToHost, s));
  CUDA_OK(cudaStreamSynchronize(s));

  // Guards.
  size_t badGuard = 0;
  for (size_t i = 0; i < G + off.d; ++i) badGuard += B.got[i] != 0xA5;
  for (size_t i = G + off.d + bytes; i < span; ++i) badGuard += B.got[i] != 0xA5;
  EXPECT(badGuard == 0, "%s %s n=%zu offsets d=%zu a=%zu b=%zu: %zu guard bytes around dst changed", dtypeStr(t),
         v.name, count, off.d, off.a, off.b, badGuard);
  // Result, bit for bit.
  const unsigned char* got = B.got + G + off.d;
  if (count > 0 && memcmp(got, B.ref.data(), bytes) != 0) {
    size_t first = 0, nbad = 0;
    for (size_t i = 0; i < count; ++i) {
      if (memcmp(got + i * es, B.ref.data() + i * es, es) != 0) {
        if (nbad == 0) first = i;
        ++nbad;
      }
    }
    uint64_t g = 0, r = 0, av = 0, bv = 0;
    memcpy(&g, got + first * es, es);
    memcpy(&r, B.ref.data() + first * es, es);
    if (v.hasA) memcpy(&av, B.ha.data() + off.a + first * es, es);
    memcpy(&bv, B.hb.data() + off.b + first * es, es);
    EXPECT(false,
           "%s %s n=%zu offsets d=%zu a=%zu b=%zu: %zu of %zu elements differ; first [%zu]: device 0x%llx, host "
           "0x%llx (a 0x%llx, b 0x%llx)",
           dtypeStr(t), v.name, count, off.d, off.a, off.b, nbad, count, first, (unsigned long long)g,
           (unsigned long long)r, (unsigned long long)av, (unsigned long long)bv);
  } else if (o.verbose) {
    printf("  ok %s %s n=%zu d=%zu a=%zu b=%zu\n", dtypeStr(t), v.name, count, off.d, off.a, off.b);
  }
}

std::vector<Offsets> offsetsFor(size_t es, size_t count, bool small, std::mt19937_64& rng) {
  std::vector<Offsets> out;
  const size_t k = 16 / es;  // element offsets 0..k-1 within 16 bytes
  out.push_back({0, 0, 0});
  if (es < 16 && k > 1) {
    out.push_back({es, es, es});                              // same misalignment
    out.push_back({0, es, (2 * es) % 16});                    // all different
    out.push_back({(k - 1) * es, 0, (k - 1) * es});           // dst and b agree, a not
  }
  if (small || count > 100000 || k == 1) return out;
  for (size_t i = 1; i < k; ++i) {
    out.push_back({i * es, i * es, i * es});  // every common misalignment (head lengths)
    out.push_back({i * es, 0, 0});            // dst alone misaligned
  }
  for (int r = 0; r < 8; ++r) out.push_back({(rng() % k) * es, (rng() % k) * es, (rng() % k) * es});
  return out;
}

void testMatrix(const Options& o, std::mt19937_64& rng) {
  const std::vector<size_t> counts =
      o.small ? std::vector<size_t>{0, 1, 3, 16, 17, 100, 1000}
              : std::vector<size_t>{0, 1, 2, 3, 7, 15, 16, 17, 1000003, 4096 * 1024 + 5};
  size_t maxCount = *std::max_element(counts.begin(), counts.end());
  Buffers B;
  B.maxCount = maxCount;
  const size_t maxBytes = maxCount * 8 + 16;
  CUDA_OK(cudaMalloc(&B.a, maxBytes));
  CUDA_OK(cudaMalloc(&B.b, maxBytes));
  CUDA_OK(cudaMalloc(&B.d, maxBytes + 2 * Buffers::kGuard + 16));
  CUDA_OK(cudaMalloc(&B.scalar, 64));
  CUDA_OK(cudaMallocHost(&B.got, maxBytes + 2 * Buffers::kGuard + 16));
  B.ha.resize(maxBytes);
  B.hb.resize(maxBytes);
  B.ref.resize(maxBytes);
  cudaStream_t s;
  CUDA_OK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));

  for (int ti = 0; ti < ck::kNumDTypes; ++ti) {
    const ck::DType t = static_cast<ck::DType>(ti);
    const size_t es = ck::dtypeSize(t);
    const auto t0 = std::chrono::steady_clock::now();
    const int failuresBefore = g_failures;
    const long casesBefore = g_cases;
    // Inputs: maxCount elements + 16 bytes of room for the offsets.
    const size_t nfill = maxBytes / es;
    fillRandom(t, B.ha.data(), nfill, rng);
    fillRandom(t, B.hb.data(), nfill, rng);
    CUDA_OK(cudaMemcpy(B.a, B.ha.data(), nfill * es, cudaMemcpyHostToDevice));
    CUDA_OK(cudaMemcpy(B.b, B.hb.data(), nfill * es, cudaMemcpyHostToDevice));
    for (size_t count : counts) {
      for (const Offsets& off : offsetsFor(es, count, o.small, rng)) {
        for (const Variant& v : kVariants) runCase(t, v, count, off, B, s, rng, o);
      }
    }
    const double sec = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    printf("matrix %-9s %s (%ld cases, %.1f s)\n", ck::dtypeName(t), g_failures == failuresBefore ? "ok" : "FAILED",
           g_cases - casesBefore, sec);
    fflush(stdout);
    if (g_failures > 50) {
      fprintf(stderr, "too many failures, stopping\n");
      break;
    }
  }
  CUDA_OK(cudaStreamDestroy(s));
  CUDA_OK(cudaFree(B.a));
  CUDA_OK(cudaFree(B.b));
  CUDA_OK(cudaFree(B.d));
  CUDA_OK(cudaFree(B.scalar));
  CUDA_OK(cudaFreeHost(B.got));
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--small") o.small = true;
    else if (arg == "--no-async") o.async = false;
    else if (arg == "--verbose") o.verbose = true;
    else if (arg == "--seed" && i + 1 < argc) o.seed = strtoull(argv[++i], nullptr, 0);
    else {
      fprintf(stderr, "usage: %s [--small] [--no-async] [--seed N] [--verbose]\n", argv[0]);
      return 2;
    }
  }
  int ndev = 0;
  const cudaError_t derr = cudaGetDeviceCount(&ndev);
  if (derr != cudaSuccess || ndev == 0) {
    printf("SKIP: no CUDA device (%s)\n", derr != cudaSuccess ? cudaGetErrorString(derr) : "0 devices");
    return 77;
  }
  cudaDeviceProp prop{};
  CUDA_OK(cudaGetDeviceProperties(&prop, 0));
  printf("device 0: %s (sm_%d%d), host kernels: %s, seed %llu%s\n", prop.name, prop.major, prop.minor,
         ck::activeIsa(), (unsigned long long)o.seed, o.small ? ", --small" : "");
  std::mt19937_64 rng(o.seed);
  const auto t0 = std::chrono::steady_clock::now();

  testConversions(o, rng);
  testArguments();
  if (o.async) testAsync(rng);
  testMatrix(o, rng);
  CUDA_OK(cudaDeviceSynchronize());

  const double sec = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (g_failures != 0) {
    printf("FAILED: %d failures (%ld reduce cases, %.1f s)\n", g_failures, g_cases, sec);
    return 1;
  }
  printf("PASS: %ld reduce cases bit-identical to the host kernels, guards intact (%.1f s)\n", g_cases, sec);
  return 0;
}
