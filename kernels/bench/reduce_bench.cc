// reduce_bench.cc — throughput of coll::kernels::reduce() per ISA, dtype, op
// and size.  GB/s counts dst + a + b traffic (3 x bytes per call).
//
//   coll_kernels_bench [--isa LIST] [--dtype LIST] [--op LIST] [--size LIST]
//                      [--pre] [--post] [--time SECONDS]
// LIST is comma-separated; sizes take K/M/G suffixes (bytes per buffer).
// Defaults: every ISA this CPU has, every dtype and op, 256K,4M,64M, 0.1 s.
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "coll/kernels/reduce.h"
#include "internal.h"

namespace ck = coll::kernels;

namespace {

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

size_t parseSize(const std::string& s) {
  char* end = nullptr;
  double v = strtod(s.c_str(), &end);
  switch (end != nullptr ? *end : '\0') {
    case 'k': case 'K': v *= 1024; break;
    case 'm': case 'M': v *= 1024 * 1024; break;
    case 'g': case 'G': v *= 1024.0 * 1024 * 1024; break;
    default: break;
  }
  return size_t(v);
}

bool contains(const std::vector<std::string>& list, const char* name) {
  if (list.empty()) return true;
  for (const auto& s : list)
    if (s == name || s == "all") return true;
  return false;
}

// Fill with ordinary finite values of the type (no NaN/denormal slow paths).
void fill(ck::DType t, void* p, size_t n, unsigned seed) {
  for (size_t i = 0; i < n; ++i) {
    const float x = 0.5f + float((i * 2654435761u + seed) % 1000) / 1000.0f;
    switch (t) {
      case ck::DType::Int8: case ck::DType::Uint8: static_cast<uint8_t*>(p)[i] = uint8_t(i + seed); break;
      case ck::DType::Int32: case ck::DType::Uint32: static_cast<uint32_t*>(p)[i] = uint32_t(i * 7 + seed); break;
      case ck::DType::Int64: case ck::DType::Uint64: static_cast<uint64_t*>(p)[i] = uint64_t(i * 7 + seed); break;
      case ck::DType::Float16: static_cast<uint16_t*>(p)[i] = ck::floatToHalf(x); break;
      case ck::DType::Bfloat16: static_cast<uint16_t*>(p)[i] = ck::floatToBf16(x); break;
      case ck::DType::Float32: static_cast<float*>(p)[i] = x; break;
      case ck::DType::Float64: static_cast<double*>(p)[i] = x; break;
      case ck::DType::Fp8E4M3: static_cast<uint8_t*>(p)[i] = ck::floatToE4M3(x); break;
      case ck::DType::Fp8E5M2: static_cast<uint8_t*>(p)[i] = ck::floatToE5M2(x); break;
    }
  }
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> isas, dtypes, ops, sizeList = {"256K", "4M", "64M"};
  bool pre = false, post = false;
  double minTime = 0.1;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    auto next = [&]() -> std::string {
      if (i + 1 >= argc) {
        fprintf(stderr, "%s needs a value\n", arg.c_str());
        exit(2);
      }
      return argv[++i];
    };
    if (arg == "--isa") isas = split(next());
    else if (arg == "--dtype") dtypes = split(next());
    else if (arg == "--op") ops = split(next());
    else if (arg == "--size") sizeList = split(next());
    else if (arg == "--pre") pre = true;
    else if (arg == "--post") post = true;
    else if (arg == "--time") minTime = atof(next().c_str());
    else {
      fprintf(stderr,
              "usage: %s [--isa scalar,avx2,avx512] [--dtype float32,...] [--op sum,...]\n"
              "          [--size 256K,4M,64M] [--pre] [--post] [--time SECONDS]\n",
              argv[0]);
      return arg == "--help" || arg == "-h" ? 0 : 2;
    }
  }
  std::vector<size_t> sizes;
  size_t maxBytes = 0;
  for (const auto& s : sizeList) {
    sizes.push_back(parseSize(s));
    if (sizes.back() > maxBytes) maxBytes = sizes.back();
  }
  const size_t alloc = (maxBytes + 64 + 63) / 64 * 64;
  auto* dst = static_cast<unsigned char*>(aligned_alloc(64, alloc));
  auto* a = static_cast<unsigned char*>(aligned_alloc(64, alloc));
  auto* b = static_cast<unsigned char*>(aligned_alloc(64, alloc));
  if (dst == nullptr || a == nullptr || b == nullptr) {
    fprintf(stderr, "out of memory\n");
    return 1;
  }
  memset(dst, 0, alloc);

  printf("%-7s %-9s %-5s %10s %10s %9s\n", "isa", "dtype", "op", "bytes", "us/call", "GB/s");
  for (const char* isa : {"avx512", "avx2", "scalar"}) {
    if (!contains(isas, isa) || ck::detail::findIsa(isa) == nullptr) continue;
    ck::setIsa(isa);
    for (int t = 0; t < ck::kNumDTypes; ++t) {
      const auto dt = static_cast<ck::DType>(t);
      if (!contains(dtypes, ck::dtypeName(dt))) continue;
      const size_t esz = ck::dtypeSize(dt);
      fill(dt, a, alloc / esz, 1);
      fill(dt, b, alloc / esz, 2);
      for (int o = 0; o < ck::kNumOps; ++o) {
        const auto op = static_cast<ck::Op>(o);
        if (!contains(ops, ck::opName(op))) continue;
        ck::ReduceFn fn;
        fn.dtype = dt;
        fn.op = op;
        fn.premul = pre;
        if (dt == ck::DType::Int8 || dt == ck::DType::Int32 || dt == ck::DType::Int64) fn.scalar.i = 3;
        else if (dt == ck::DType::Uint8 || dt == ck::DType::Uint32 || dt == ck::DType::Uint64) fn.scalar.u = 3;
        else fn.scalar.f = 0.5;
        fn.divisor = post ? 8 : 0;
        for (size_t bytes : sizes) {
          const size_t n = bytes / esz;
          // Products of the same inputs stay finite because dst is rewritten
          // from a and b each call (dst != a, b).
          ck::reduce(fn, dst, a, b, n, pre, post);  // warm-up
          size_t reps = 0;
          double best = 1e30;
          const auto start = std::chrono::steady_clock::now();
          double elapsed = 0;
          while (elapsed < minTime || reps < 3) {
            const auto t0 = std::chrono::steady_clock::now();
            ck::reduce(fn, dst, a, b, n, pre, post);
            const auto t1 = std::chrono::steady_clock::now();
            const double dt1 = std::chrono::duration<double>(t1 - t0).count();
            if (dt1 < best) best = dt1;
            ++reps;
            elapsed = std::chrono::duration<double>(t1 - start).count();
          }
          const double avg = elapsed / double(reps);
          printf("%-7s %-9s %-5s %10zu %10.2f %9.2f   (best %.2f GB/s)\n", isa, ck::dtypeName(dt),
                 ck::opName(op), n * esz, avg * 1e6, 3.0 * double(n * esz) / avg / 1e9,
                 3.0 * double(n * esz) / best / 1e9);
          fflush(stdout);
        }
      }
    }
  }
  free(dst);
  free(a);
  free(b);
  return 0;
}
