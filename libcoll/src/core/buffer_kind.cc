#include "core/buffer_kind.h"

#include <dlfcn.h>
#include <link.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>

namespace coll::core {
namespace {

// The few driver API names and values we use (cuda.h is not needed, so this
// file builds without the toolkit).
using CUresult = int;
using CUdeviceptr = unsigned long long;
// cuPointerGetAttributes: unlike the singular call it is not an error for a
// pointer the driver does not know (plain host memory): the attributes read
// as zero.  So compute-sanitizer sees no failing API call.
using PointerGetAttributesFn = CUresult (*)(unsigned int n, int* attributes, void** data, CUdeviceptr ptr);
using InitFn = CUresult (*)(unsigned int flags);
constexpr int kAttrMemoryType = 2;     // CU_POINTER_ATTRIBUTE_MEMORY_TYPE
constexpr int kAttrDeviceOrdinal = 9;  // CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL
constexpr unsigned kMemTypeDevice = 2;   // CU_MEMORYTYPE_DEVICE
constexpr unsigned kMemTypeUnified = 4;  // CU_MEMORYTYPE_UNIFIED

std::atomic<PointerGetAttributesFn> gGetAttrs{nullptr};

// The path of the loaded CUDA driver, from the loader's in-memory list: a
// walk of a few dozen entries, no file system access (dlopen with
// RTLD_NOLOAD of a bare name searches the library path on every call when
// the library is not loaded: tens of microseconds per collective).
int findDriver(struct dl_phdr_info* info, size_t, void* out) {
  const char* name = info->dlpi_name;
  if (name == nullptr || *name == '\0') return 0;
  const char* base = std::strrchr(name, '/');
  base = base != nullptr ? base + 1 : name;
  if (std::strncmp(base, "libcuda.so", 10) != 0) return 0;
  *static_cast<std::string*>(out) = name;
  return 1;
}

// How many objects the loader has ever loaded (dlpi_adds): read from the
// first entry, so O(1).
int readLoadCount(struct dl_phdr_info* info, size_t size, void* out) {
  *static_cast<unsigned long long*>(out) =
      size >= offsetof(struct dl_phdr_info, dlpi_adds) + sizeof info->dlpi_adds ? info->dlpi_adds : 0;
  return 1;
}

// The load count when the list was last searched in vain: the driver cannot
// have appeared until something new is loaded, so a host-only program pays
// one O(1) check per call, not a walk of the list.
std::atomic<unsigned long long> gSearchedAtLoadCount{~0ull};

// Null until the process has loaded the driver; then found once and kept.
PointerGetAttributesFn driver() {
  PointerGetAttributesFn f = gGetAttrs.load(std::memory_order_acquire);
  if (f != nullptr) return f;
  unsigned long long loads = 0;
  dl_iterate_phdr(readLoadCount, &loads);
  if (loads != 0 && loads == gSearchedAtLoadCount.load(std::memory_order_relaxed)) return nullptr;
  std::string path;
  if (dl_iterate_phdr(findDriver, &path) == 0 || path.empty()) {
    gSearchedAtLoadCount.store(loads, std::memory_order_relaxed);
    return nullptr;
  }
  void* h = dlopen(path.c_str(), RTLD_NOW | RTLD_NOLOAD);
  if (h == nullptr) return nullptr;
  auto init = reinterpret_cast<InitFn>(dlsym(h, "cuInit"));
  auto get = reinterpret_cast<PointerGetAttributesFn>(dlsym(h, "cuPointerGetAttributes"));
  // The handle stays open: the process holds the library anyway.
  if (init == nullptr || get == nullptr || init(0) != 0) return nullptr;
  gGetAttrs.store(get, std::memory_order_release);
  return get;
}

}  // namespace

bool cudaDriverLoaded() { return driver() != nullptr; }

BufferKind bufferKind(const void* p) {
  BufferKind k;
  if (p == nullptr) return k;
  PointerGetAttributesFn get = driver();
  if (get == nullptr) return k;
  unsigned memType = 0;
  int ordinal = -1;
  int attrs[2] = {kAttrMemoryType, kAttrDeviceOrdinal};
  void* data[2] = {&memType, &ordinal};
  if (get(2, attrs, data, reinterpret_cast<CUdeviceptr>(p)) != 0) return k;
  if (memType != kMemTypeDevice && memType != kMemTypeUnified) return k;
  k.kind = MemKind::Device;
  k.device = ordinal;
  return k;
}

}  // namespace coll::core
