// runtime_memory.cc — the emulated runtime's memory: device allocations,
// pinned and registered host memory, CUDA IPC between processes, copies and
// sets, and the two driver entry points libcoll looks up by name (cuInit,
// cuPointerGetAttributes; core/buffer_kind.cc).
//
// Device memory is a memfd mapped shared, so that another process can map
// it from a cudaIpcMemHandle_t (/proc/<pid>/fd/<fd>), as CUDA IPC maps
// another process's allocation.  Each allocation ends where its last page
// ends and has an inaccessible page on either side, so a kernel or copy
// that runs more than 256 bytes past either end faults at once; new device
// memory is filled with 0xCD, so code that reads memory it never wrote
// does not see the zeros a fresh mapping would give.
#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <map>
#include <string>

#include "runtime_state.h"

namespace coll::emu::rt {
namespace {

constexpr size_t kPage = 4096;
constexpr size_t kAlign = 256;  // cudaMalloc's alignment
constexpr uint32_t kIpcMagic = 0xC011E3D1u;

size_t roundUp(size_t v, size_t a) { return (v + a - 1) / a * a; }

struct Entry {
  Region region;
  char* reserve = nullptr;  // the mapping with its guard pages (device memory and peer mappings)
  size_t reserveBytes = 0;
  int fd = -1;              // device memory: the memfd peers open
  size_t fileBytes = 0;
};

struct Registry {
  std::mutex m;
  std::map<uintptr_t, Entry> byBegin;
};
Registry& registry() {
  static Registry* r = new Registry;  // never destroyed: streams may still run at exit
  return *r;
}

// What cudaIpcGetMemHandle puts in the handle's 64 bytes.
struct IpcHandle {
  uint32_t magic;
  int32_t pid;
  int32_t fd;
  int32_t device;
  uint64_t fileBytes;
  uint64_t offset;  // of the allocation in the file
  uint64_t bytes;
};
static_assert(sizeof(IpcHandle) <= CUDA_IPC_HANDLE_SIZE);

// Maps fileBytes of fd between two guard pages; the data starts one page in.
char* mapGuarded(int fd, size_t fileBytes, size_t* reserveBytes) {
  *reserveBytes = fileBytes + 2 * kPage;
  void* r = mmap(nullptr, *reserveBytes, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (r == MAP_FAILED) return nullptr;
  char* reserve = static_cast<char*>(r);
  if (mmap(reserve + kPage, fileBytes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED, fd, 0) == MAP_FAILED) {
    munmap(reserve, *reserveBytes);
    return nullptr;
  }
  return reserve;
}

void add(const Entry& e) {
  std::lock_guard<std::mutex> lock(registry().m);
  registry().byBegin[reinterpret_cast<uintptr_t>(e.region.begin)] = e;
}

// Removes and returns the entry that begins at p with one of the kinds.
bool take(const void* p, std::initializer_list<MemKind> kinds, Entry* out) {
  std::lock_guard<std::mutex> lock(registry().m);
  auto it = registry().byBegin.find(reinterpret_cast<uintptr_t>(p));
  if (it == registry().byBegin.end()) return false;
  bool match = false;
  for (MemKind k : kinds) match = match || it->second.region.kind == k;
  if (!match) return false;
  *out = it->second;
  registry().byBegin.erase(it);
  return true;
}

bool onDevice(const void* p) {
  Region r;
  return findRegion(p, &r) && (r.kind == MemKind::Device || r.kind == MemKind::PeerMapping);
}

}  // namespace

bool findRegion(const void* p, Region* out) {
  const auto a = reinterpret_cast<uintptr_t>(p);
  std::lock_guard<std::mutex> lock(registry().m);
  auto it = registry().byBegin.upper_bound(a);
  if (it == registry().byBegin.begin()) return false;
  --it;
  const Region& r = it->second.region;
  if (a >= reinterpret_cast<uintptr_t>(r.begin) + std::max<size_t>(r.bytes, 1)) return false;
  *out = r;
  return true;
}

}  // namespace coll::emu::rt

namespace coll::emu {

uint64_t pinnedBytes() {
  std::lock_guard<std::mutex> lock(rt::registry().m);
  uint64_t total = 0;
  for (const auto& [begin, e] : rt::registry().byBegin)
    if (e.region.kind == rt::MemKind::Pinned) total += e.region.bytes;
  return total;
}

}  // namespace coll::emu

using coll::emu::NodeKind;
using coll::emu::rt::Entry;
using coll::emu::rt::fail;
using coll::emu::rt::MemKind;
using coll::emu::rt::ok;

// ---- device memory ----

cudaError_t cudaMalloc(void** out, size_t bytes) {
  using namespace coll::emu::rt;
  if (out == nullptr) return fail(cudaErrorInvalidValue);
  *out = nullptr;
  if (bytes == 0) return ok();
  Entry e;
  e.fileBytes = roundUp(bytes, kPage);
  e.fd = memfd_create("coll-emu-device", MFD_CLOEXEC);
  if (e.fd < 0) return fail(cudaErrorMemoryAllocation);
  if (ftruncate(e.fd, static_cast<off_t>(e.fileBytes)) != 0 ||
      (e.reserve = mapGuarded(e.fd, e.fileBytes, &e.reserveBytes)) == nullptr) {
    close(e.fd);
    return fail(cudaErrorMemoryAllocation);
  }
  const size_t offset = e.fileBytes - roundUp(bytes, kAlign);
  e.region = Region{e.reserve + kPage + offset, bytes, MemKind::Device, currentDevice()};
  std::memset(e.region.begin, 0xCD, bytes);
  add(e);
  *out = e.region.begin;
  return ok();
}

// Waits for all queued work first, as cudaFree does.
cudaError_t cudaFree(void* p) {
  using namespace coll::emu::rt;
  if (p == nullptr) return ok();
  synchronizeAll();
  Entry e;
  if (!take(p, {MemKind::Device}, &e)) return fail(cudaErrorInvalidValue);
  munmap(e.reserve, e.reserveBytes);
  close(e.fd);
  return ok();
}

// ---- host memory ----

cudaError_t cudaHostAlloc(void** out, size_t bytes, unsigned) {
  using namespace coll::emu::rt;
  if (out == nullptr) return fail(cudaErrorInvalidValue);
  void* p = nullptr;
  if (posix_memalign(&p, kPage, std::max<size_t>(bytes, 1)) != 0) return fail(cudaErrorMemoryAllocation);
  Entry e;
  e.region = Region{static_cast<char*>(p), bytes, MemKind::Pinned, currentDevice()};
  add(e);
  *out = p;
  return ok();
}

cudaError_t cudaMallocHost(void** out, size_t bytes) { return cudaHostAlloc(out, bytes, cudaHostAllocDefault); }

cudaError_t cudaFreeHost(void* p) {
  using namespace coll::emu::rt;
  if (p == nullptr) return ok();
  synchronizeAll();
  Entry e;
  if (!take(p, {MemKind::Pinned}, &e)) return fail(cudaErrorInvalidValue);
  std::free(p);
  return ok();
}

cudaError_t cudaHostRegister(void* p, size_t bytes, unsigned) {
  using namespace coll::emu::rt;
  Region r;
  if (p == nullptr || bytes == 0) return fail(cudaErrorInvalidValue);
  if (findRegion(p, &r)) return fail(cudaErrorHostMemoryAlreadyRegistered);
  Entry e;
  e.region = Region{static_cast<char*>(p), bytes, MemKind::Registered, currentDevice()};
  add(e);
  return ok();
}

cudaError_t cudaHostUnregister(void* p) {
  using namespace coll::emu::rt;
  Entry e;
  if (!take(p, {MemKind::Registered}, &e)) return fail(cudaErrorHostMemoryNotRegistered);
  return ok();
}

// Pinned and registered memory is mapped: the device sees the host address.
cudaError_t cudaHostGetDevicePointer(void** out, void* host, unsigned flags) {
  using namespace coll::emu::rt;
  Region r;
  if (out == nullptr || flags != 0) return fail(cudaErrorInvalidValue);
  if (!findRegion(host, &r) || (r.kind != MemKind::Pinned && r.kind != MemKind::Registered))
    return fail(cudaErrorInvalidValue);
  *out = host;
  return ok();
}

// ---- CUDA IPC ----

cudaError_t cudaIpcGetMemHandle(cudaIpcMemHandle_t* handle, void* p) {
  using namespace coll::emu::rt;
  if (handle == nullptr) return fail(cudaErrorInvalidValue);
  std::lock_guard<std::mutex> lock(registry().m);
  auto it = registry().byBegin.find(reinterpret_cast<uintptr_t>(p));
  if (it == registry().byBegin.end() || it->second.region.kind != MemKind::Device) return fail(cudaErrorInvalidValue);
  const Entry& e = it->second;
  IpcHandle h{kIpcMagic, static_cast<int32_t>(getpid()), e.fd, e.region.device, e.fileBytes,
              static_cast<uint64_t>(e.region.begin - (e.reserve + kPage)), e.region.bytes};
  std::memset(handle, 0, sizeof *handle);
  std::memcpy(handle->reserved, &h, sizeof h);
  return ok();
}

cudaError_t cudaIpcOpenMemHandle(void** out, cudaIpcMemHandle_t handle, unsigned) {
  using namespace coll::emu::rt;
  if (out == nullptr) return fail(cudaErrorInvalidValue);
  IpcHandle h;
  std::memcpy(&h, handle.reserved, sizeof h);
  if (h.magic != kIpcMagic) return fail(cudaErrorInvalidResourceHandle);
  if (h.pid == getpid()) return fail(cudaErrorDeviceUninitialized);  // as CUDA: not in the exporting process
  const std::string path = "/proc/" + std::to_string(h.pid) + "/fd/" + std::to_string(h.fd);
  const int fd = open(path.c_str(), O_RDWR | O_CLOEXEC);
  if (fd < 0) return fail(cudaErrorInvalidResourceHandle);
  Entry e;
  e.fileBytes = h.fileBytes;
  e.reserve = mapGuarded(fd, h.fileBytes, &e.reserveBytes);
  close(fd);
  if (e.reserve == nullptr) return fail(cudaErrorMapBufferObjectFailed);
  e.region = Region{e.reserve + kPage + h.offset, h.bytes, MemKind::PeerMapping, h.device};
  add(e);
  *out = e.region.begin;
  return ok();
}

cudaError_t cudaIpcCloseMemHandle(void* p) {
  using namespace coll::emu::rt;
  Entry e;
  if (!take(p, {MemKind::PeerMapping}, &e)) return fail(cudaErrorInvalidValue);
  munmap(e.reserve, e.reserveBytes);
  return ok();
}

// ---- copies and sets ----
// A copy from pageable host memory reads it before returning, and a copy to
// pageable host memory returns once it has landed, as CUDA's do.

cudaError_t cudaMemcpy2DAsync(void* dst, size_t dpitch, const void* src, size_t spitch, size_t width, size_t height,
                              cudaMemcpyKind, cudaStream_t s) {
  using namespace coll::emu::rt;
  if (width == 0 || height == 0) return ok();
  if (dst == nullptr || src == nullptr || dpitch < width || spitch < width) return fail(cudaErrorInvalidValue);
  Region r;
  std::function<void()> work;
  if (!findRegion(src, &r)) {  // pageable source: read now
    std::string copy(width * height, '\0');
    for (size_t y = 0; y < height; ++y) std::memcpy(copy.data() + y * width, static_cast<const char*>(src) + y * spitch, width);
    work = [dst, dpitch, width, height, copy = std::move(copy)] {
      for (size_t y = 0; y < height; ++y) std::memcpy(static_cast<char*>(dst) + y * dpitch, copy.data() + y * width, width);
    };
  } else {
    work = [=] {
      for (size_t y = 0; y < height; ++y)
        std::memmove(static_cast<char*>(dst) + y * dpitch, static_cast<const char*>(src) + y * spitch, width);
    };
  }
  const cudaError_t e = coll::emu::enqueue(s, NodeKind::Memcpy, std::move(work));
  if (e != cudaSuccess) return fail(e);
  CUstream_st* st = resolve(s);
  if (!findRegion(dst, &r) && onDevice(src) && st->capture.load() == nullptr) st->waitFor(st->ticket());
  return ok();
}

cudaError_t cudaMemcpyAsync(void* dst, const void* src, size_t bytes, cudaMemcpyKind kind, cudaStream_t s) {
  return cudaMemcpy2DAsync(dst, bytes, src, bytes, bytes, 1, kind, s);
}

cudaError_t cudaMemcpy(void* dst, const void* src, size_t bytes, cudaMemcpyKind kind) {
  const cudaError_t e = cudaMemcpyAsync(dst, src, bytes, kind, nullptr);
  if (e != cudaSuccess) return e;
  return cudaStreamSynchronize(nullptr);
}

cudaError_t cudaMemsetAsync(void* p, int value, size_t bytes, cudaStream_t s) {
  using namespace coll::emu::rt;
  if (bytes == 0) return ok();
  if (p == nullptr) return fail(cudaErrorInvalidValue);
  const cudaError_t e = coll::emu::enqueue(s, NodeKind::Memset, [=] { std::memset(p, value, bytes); });
  return e == cudaSuccess ? ok() : fail(e);
}

cudaError_t cudaMemset(void* p, int value, size_t bytes) {
  const cudaError_t e = cudaMemsetAsync(p, value, bytes, nullptr);
  if (e != cudaSuccess) return e;
  return cudaStreamSynchronize(nullptr);
}

// ---- the driver entry points core/buffer_kind.cc looks up ----

extern "C" {
__attribute__((visibility("default"))) int cuInit(unsigned) { return 0; }

// CU_POINTER_ATTRIBUTE_MEMORY_TYPE (2) and _DEVICE_ORDINAL (9); memory the
// runtime does not know reads as type 0, as the driver reports plain host
// memory.
__attribute__((visibility("default"))) int cuPointerGetAttributes(unsigned n, int* attributes, void** data,
                                                                   unsigned long long ptr) {
  using namespace coll::emu::rt;
  Region r;
  const bool known = findRegion(reinterpret_cast<const void*>(ptr), &r);
  for (unsigned i = 0; i < n; ++i) {
    if (attributes[i] == 2) {
      unsigned type = 0;
      if (known) type = r.kind == MemKind::Device || r.kind == MemKind::PeerMapping ? 2u : 1u;
      std::memcpy(data[i], &type, sizeof type);
    } else if (attributes[i] == 9) {
      const int ordinal = known ? r.device : -1;
      std::memcpy(data[i], &ordinal, sizeof ordinal);
    } else {
      return 1;  // CUDA_ERROR_INVALID_VALUE
    }
  }
  return 0;
}
}
