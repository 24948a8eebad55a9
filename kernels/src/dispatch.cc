// dispatch.cc — picks the implementation once (thread-safe), honours
// COLL_KERNELS_ISA, and forwards reduce() to it.
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "coll/base/settings.h"
#include "internal.h"

#if COLL_KERNELS_HAVE_X86_ISAS
#include <cpuid.h>
#endif

namespace coll::kernels {
namespace detail {
namespace {

#if COLL_KERNELS_HAVE_X86_ISAS
struct CpuFeatures {
  bool avx2 = false;    // AVX2 + F16C, with the OS saving YMM state
  bool avx512 = false;  // AVX-512 F/BW/VL/DQ, with the OS saving ZMM state
};

uint64_t readXcr0() {
  uint32_t lo = 0, hi = 0;
  __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
  return (uint64_t(hi) << 32) | lo;
}

CpuFeatures detectCpu() {
  CpuFeatures f;
  unsigned a = 0, b = 0, c = 0, d = 0;
  if (!__get_cpuid(1, &a, &b, &c, &d)) return f;
  const bool osxsave = (c >> 27) & 1, avx = (c >> 28) & 1, f16c = (c >> 29) & 1;
  if (!osxsave || !avx) return f;
  const uint64_t xcr0 = readXcr0();
  const bool ymmState = (xcr0 & 0x6) == 0x6;
  const bool zmmState = ymmState && (xcr0 & 0xe0) == 0xe0;
  if (__get_cpuid_max(0, nullptr) < 7) return f;
  __cpuid_count(7, 0, a, b, c, d);
  const bool avx2 = (b >> 5) & 1;
  const bool avx512f = (b >> 16) & 1, avx512dq = (b >> 17) & 1;
  const bool avx512bw = (b >> 30) & 1, avx512vl = (b >> 31) & 1;
  f.avx2 = ymmState && avx2 && f16c;
  f.avx512 = f.avx2 && zmmState && avx512f && avx512dq && avx512bw && avx512vl;
  return f;
}

const CpuFeatures& cpu() {
  static const CpuFeatures f = detectCpu();
  return f;
}
#endif

bool supported(const IsaImpl* impl) {
  if (impl == &kScalarImpl) return true;
#if COLL_KERNELS_HAVE_X86_ISAS
  if (impl == &kAvx2Impl) return cpu().avx2;
  if (impl == &kAvx512Impl) return cpu().avx512;
#endif
  return false;
}

const IsaImpl* byName(const char* name) {
  if (name == nullptr) return nullptr;
  if (strcmp(name, "scalar") == 0) return &kScalarImpl;
#if COLL_KERNELS_HAVE_X86_ISAS
  if (strcmp(name, "avx2") == 0) return &kAvx2Impl;
  if (strcmp(name, "avx512") == 0) return &kAvx512Impl;
#endif
  return nullptr;
}

const IsaImpl* best() {
#if COLL_KERNELS_HAVE_X86_ISAS
  if (cpu().avx512) return &kAvx512Impl;
  if (cpu().avx2) return &kAvx2Impl;
#endif
  return &kScalarImpl;
}

const IsaImpl* fromEnvironment() {
  const IsaImpl* top = best();
  // A bad value is warned about here and fails init (settings::checkAll).
  auto isa = coll::settings::readChoice("COLL_KERNELS_ISA");
  if (!isa.isOk()) {
    fprintf(stderr, "coll kernels: %s; using %s\n", isa.status().message().c_str(), top->name);
    return top;
  }
  if (!isa.value()) return top;
  const char* env = isa.value()->c_str();
  const IsaImpl* want = byName(env);
  if (want == nullptr || !supported(want)) {
    fprintf(stderr, "coll kernels: COLL_KERNELS_ISA=%s is not supported by this CPU/build; using %s\n",
            env, top->name);
    return top;
  }
  return want;
}

std::atomic<const IsaImpl*> g_active{nullptr};

const IsaImpl* ensureInit() {
  // A function-local static initialises exactly once, even under races.
  static const bool done = [] {
    g_active.store(fromEnvironment(), std::memory_order_release);
    return true;
  }();
  (void)done;
  return g_active.load(std::memory_order_acquire);
}

inline const IsaImpl* active() {
  const IsaImpl* p = g_active.load(std::memory_order_acquire);
  return p != nullptr ? p : ensureInit();
}

}  // namespace

const IsaImpl* findIsa(const char* isa) {
  const IsaImpl* impl = byName(isa);
  return impl != nullptr && supported(impl) ? impl : nullptr;
}

}  // namespace detail

void reduce(const ReduceFn& fn, void* dst, const void* a, const void* b, size_t n, bool applyPre,
            bool applyPost) {
  if (n == 0) return;
  detail::active()->reduce(fn, dst, a, b, n, applyPre, applyPost);
}

const char* activeIsa() { return detail::active()->name; }

bool setIsa(const char* name) {
  detail::ensureInit();
  const detail::IsaImpl* impl = detail::findIsa(name);
  if (impl == nullptr) return false;
  detail::g_active.store(impl, std::memory_order_release);
  return true;
}

}  // namespace coll::kernels
