// device_reduce_bench — GB/s of collDeviceReduce against cudaMemcpy D2D.
//
// For each (dtype, size): warm-up, then `reps` timed runs (one cudaEvent pair
// around each call), median.  Bytes counted: reduction 2 reads + 1 write of
// `size` bytes each (3 x size), copy 1 read + 1 write (2 x size); the copy is
// measured in the same run at the same size, and the ratio is kernel / copy
// GB/s (1.0 = the reduction streams as fast as the copy engine path).
//
//   coll_device_reduce_bench [--sizes 64M,256M] [--reps 20] [--dtypes float32,bfloat16,float16]
//
// Exit 0 with the table; 77 if there is no CUDA device; 1 on a CUDA error or
// a wrong result (one spot check per dtype against the host kernels).
#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "coll/device_reduce.h"
#include "coll/kernels/reduce.h"

namespace ck = coll::kernels;

namespace {

#define CHECK(call)                                                                   \
  do {                                                                                \
    cudaError_t e_ = (call);                                                          \
    if (e_ != cudaSuccess) {                                                          \
      fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #call, cudaGetErrorString(e_)); \
      exit(1);                                                                        \
    }                                                                                 \
  } while (0)

size_t parseSize(const std::string& s) {
  char* end = nullptr;
  double v = strtod(s.c_str(), &end);
  switch (end && *end ? *end : ' ') {
    case 'K': case 'k': v *= 1024; break;
    case 'M': case 'm': v *= 1024 * 1024; break;
    case 'G': case 'g': v *= 1024.0 * 1024 * 1024; break;
    default: break;
  }
  return static_cast<size_t>(v);
}

std::vector<std::string> split(const std::string& s) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start <= s.size()) {
    size_t comma = s.find(',', start);
    if (comma == std::string::npos) comma = s.size();
    if (comma > start) out.push_back(s.substr(start, comma - start));
    start = comma + 1;
  }
  return out;
}

bool dtypeByName(const std::string& name, ck::DType* t) {
  for (int i = 0; i < ck::kNumDTypes; ++i) {
    if (name == ck::dtypeName(static_cast<ck::DType>(i))) {
      *t = static_cast<ck::DType>(i);
      return true;
    }
  }
  return false;
}

std::string human(size_t bytes) {
  char buf[32];
  if (bytes % (1024 * 1024) == 0) snprintf(buf, sizeof buf, "%zu MiB", bytes >> 20);
  else if (bytes % 1024 == 0) snprintf(buf, sizeof buf, "%zu KiB", bytes >> 10);
  else snprintf(buf, sizeof buf, "%zu B", bytes);
  return buf;
}

template <class F> double medianMs(int reps, cudaStream_t s, F&& body) {
  cudaEvent_t t0, t1;
  CHECK(cudaEventCreate(&t0));
  CHECK(cudaEventCreate(&t1));
  for (int w = 0; w < 3; ++w) body();  // warm-up
  CHECK(cudaStreamSynchronize(s));
  std::vector<float> ms;
  for (int r = 0; r < reps; ++r) {
    CHECK(cudaEventRecord(t0, s));
    body();
    CHECK(cudaEventRecord(t1, s));
    CHECK(cudaEventSynchronize(t1));
    float m = 0;
    CHECK(cudaEventElapsedTime(&m, t0, t1));
    ms.push_back(m);
  }
  CHECK(cudaEventDestroy(t0));
  CHECK(cudaEventDestroy(t1));
  std::sort(ms.begin(), ms.end());
  return ms.size() % 2 ? ms[ms.size() / 2] : 0.5 * (ms[ms.size() / 2 - 1] + ms[ms.size() / 2]);
}

// Finite, moderate inputs of dtype t (random bits would be NaN-heavy for fp8).
void fillInput(ck::DType t, std::vector<unsigned char>& buf, unsigned seed) {
  const size_t es = ck::dtypeSize(t), n = buf.size() / es;
  uint64_t x = 0x9e3779b97f4a7c15ull * (seed + 1);
  for (size_t i = 0; i < n; ++i) {
    x ^= x << 13; x ^= x >> 7; x ^= x << 17;
    const float f = float(int64_t(x % 2001) - 1000) / 37.0f;
    unsigned char* p = buf.data() + i * es;
    switch (t) {
      case ck::DType::Float32: memcpy(p, &f, 4); break;
      case ck::DType::Float64: { double d = f; memcpy(p, &d, 8); break; }
      case ck::DType::Float16: { uint16_t h = ck::floatToHalf(f); memcpy(p, &h, 2); break; }
      case ck::DType::Bfloat16: { uint16_t h = ck::floatToBf16(f); memcpy(p, &h, 2); break; }
      case ck::DType::Fp8E4M3: p[0] = ck::floatToE4M3(f); break;
      case ck::DType::Fp8E5M2: p[0] = ck::floatToE5M2(f); break;
      default: memcpy(p, &x, es); break;
    }
  }
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<size_t> sizes = {64u << 20, 256u << 20};
  std::vector<std::string> dtypes = {"float32", "bfloat16", "float16"};
  int reps = 20;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--sizes" && i + 1 < argc) {
      sizes.clear();
      for (const auto& s : split(argv[++i])) sizes.push_back(parseSize(s));
    } else if (arg == "--reps" && i + 1 < argc) {
      reps = std::max(1, atoi(argv[++i]));
    } else if (arg == "--dtypes" && i + 1 < argc) {
      dtypes = split(argv[++i]);
    } else {
      fprintf(stderr, "usage: %s [--sizes 64M,256M] [--reps 20] [--dtypes float32,bfloat16,float16]\n", argv[0]);
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
  CHECK(cudaGetDeviceProperties(&prop, 0));
  int driver = 0, runtime = 0;
  CHECK(cudaDriverGetVersion(&driver));
  CHECK(cudaRuntimeGetVersion(&runtime));
  printf("# device 0: %s, sm_%d%d, %d SMs, %.1f GiB; driver %d, runtime %d\n", prop.name, prop.major,
         prop.minor, prop.multiProcessorCount, double(prop.totalGlobalMem) / (1u << 30), driver, runtime);
  printf("# median of %d, cudaEvent timing; reduction bytes = 3 x size (2 reads + 1 write), copy = 2 x size\n",
         reps);
  printf("%-10s %-4s %9s %12s %12s %12s %12s %7s\n", "dtype", "op", "size", "kernel_us", "kernel_GB/s",
         "copy_us", "copy_GB/s", "ratio");

  size_t maxBytes = 0;
  for (size_t s : sizes) maxBytes = std::max(maxBytes, s);
  void *a = nullptr, *b = nullptr, *d = nullptr;
  CHECK(cudaMalloc(&a, maxBytes));
  CHECK(cudaMalloc(&b, maxBytes));
  CHECK(cudaMalloc(&d, maxBytes));
  cudaStream_t s;
  CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));

  int rc = 0;
  for (const std::string& name : dtypes) {
    ck::DType t;
    if (!dtypeByName(name, &t)) {
      fprintf(stderr, "unknown dtype %s\n", name.c_str());
      return 2;
    }
    const size_t es = ck::dtypeSize(t);
    for (size_t bytes : sizes) {
      const size_t n = bytes / es;
      std::vector<unsigned char> ha(n * es), hb(n * es), hd(n * es), ref(n * es);
      fillInput(t, ha, 1);
      fillInput(t, hb, 2);
      CHECK(cudaMemcpy(a, ha.data(), n * es, cudaMemcpyHostToDevice));
      CHECK(cudaMemcpy(b, hb.data(), n * es, cudaMemcpyHostToDevice));

      const double kms = medianMs(reps, s, [&] {
        CHECK(ck::collDeviceReduce(d, a, b, n, t, ck::Op::Sum, ck::ScalarArg::none(), s));
      });
      const double cms = medianMs(reps, s, [&] {
        CHECK(cudaMemcpyAsync(d, b, n * es, cudaMemcpyDeviceToDevice, s));
      });
      // Spot check: the last reduction's result equals the host kernels'.
      CHECK(ck::collDeviceReduce(d, a, b, n, t, ck::Op::Sum, ck::ScalarArg::none(), s));
      CHECK(cudaStreamSynchronize(s));
      CHECK(cudaMemcpy(hd.data(), d, n * es, cudaMemcpyDeviceToHost));
      ck::ReduceFn fn;
      fn.dtype = t;
      fn.op = ck::Op::Sum;
      ck::reduce(fn, ref.data(), ha.data(), hb.data(), n, false, false);
      const bool ok = memcmp(hd.data(), ref.data(), n * es) == 0;
      if (!ok) rc = 1;

      const double kgbs = 3.0 * double(n * es) / (kms * 1e-3) / 1e9;
      const double cgbs = 2.0 * double(n * es) / (cms * 1e-3) / 1e9;
      printf("%-10s %-4s %9s %12.1f %12.1f %12.1f %12.1f %7.3f%s\n", name.c_str(), "sum", human(bytes).c_str(),
             kms * 1e3, kgbs, cms * 1e3, cgbs, kgbs / cgbs, ok ? "" : "  WRONG RESULT");
      fflush(stdout);
    }
  }
  CHECK(cudaStreamDestroy(s));
  CHECK(cudaFree(a));
  CHECK(cudaFree(b));
  CHECK(cudaFree(d));
  return rc;
}
