// runtime_device.cc — the emulated runtime's devices (count, current
// device, properties, PCI bus ids, peer access) and errors.  Set by the
// environment: COLL_EMU_DEVICES (default 1), COLL_EMU_SMS (multiprocessors
// per device, default 4), COLL_EMU_PEER_ACCESS=0 (devices cannot reach each
// other: the host-staged path between them), COLL_EMU_STREAM_DEPTH (queue
// slots a stream holds before an enqueue blocks, default 1021),
// COLL_EMU_WORK_QUEUES (hardware work queues a process's streams share,
// default 0: each stream its own).
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <set>
#include <utility>

#include "runtime_state.h"

namespace coll::emu::rt {
namespace {

int envInt(const char* name, int fallback, int lo, int hi) {
  const char* v = std::getenv(name);
  if (v == nullptr || *v == '\0') return fallback;
  char* end = nullptr;
  const long x = std::strtol(v, &end, 10);
  if (*end != '\0' || x < lo || x > hi) {
    std::fprintf(stderr, "CUDA emulation: %s=%s is not a number in [%d, %d]\n", name, v, lo, hi);
    std::exit(2);
  }
  return static_cast<int>(x);
}

thread_local cudaError_t tLastError = cudaSuccess;
thread_local int tDevice = 0;

}  // namespace

int deviceCount() {
  static const int n = envInt("COLL_EMU_DEVICES", 1, 1, 16);
  return n;
}
int multiprocessors() {
  static const int n = envInt("COLL_EMU_SMS", 4, 1, 256);
  return n;
}
bool peerAccess() {
  static const bool on = envInt("COLL_EMU_PEER_ACCESS", 1, 0, 1) != 0;
  return on;
}
// CUDA blocks the enqueuing thread once a stream's queue is full, and how
// soon depends on what is queued: behind a held stream an H200 took 1021
// kernels or copies, but only 56 host-staged pieces of {copy, host function,
// kernel, copy} (.gpuprobe's queue probe, docs/ARCHITECTURE.md).  So the
// emulated queue holds 1021 slots, a host function taking 15 (1021 / 56 - 3)
// and anything else 1: code that queues operations per unit of data, and so
// would make the caller wait behind a busy stream, shows up here too.
int streamDepth() {
  static const int n = envInt("COLL_EMU_STREAM_DEPTH", 1021, 1, 1 << 20);
  return n;
}
int streamSlots(NodeKind kind) { return kind == NodeKind::Host ? 15 : 1; }

// CUDA aliases a process's streams onto a few hardware work queues, in
// order (under MPS the clients of a server share one pool): work on one
// stream may then wait for work queued earlier on another stream of its
// queue.  Harmless unless a kernel waits for GPU work on another stream, a
// deadlock there (the host-staged path's first design: an H200 run under
// MPS hung so).  With COLL_EMU_WORK_QUEUES=n > 0, streams take queues in
// turn as they are made (the legacy stream queue 0) and each operation
// waits for what was queued before it on its queue's other streams, so
// such a design deadlocks here too.
int workQueues() {
  static const int n = envInt("COLL_EMU_WORK_QUEUES", 0, 0, 1024);
  return n;
}

int currentDevice() { return tDevice; }

cudaError_t fail(cudaError_t e) {
  tLastError = e;
  return e;
}

}  // namespace coll::emu::rt

using coll::emu::rt::fail;
using coll::emu::rt::ok;

cudaError_t cudaGetLastError() {
  const cudaError_t e = coll::emu::rt::tLastError;
  coll::emu::rt::tLastError = cudaSuccess;
  return e;
}

cudaError_t cudaPeekAtLastError() { return coll::emu::rt::tLastError; }

const char* cudaGetErrorName(cudaError_t e) {
  switch (e) {
#define COLL_EMU_ERROR(E) \
  case E: return #E;
    COLL_EMU_ERROR(cudaSuccess)
    COLL_EMU_ERROR(cudaErrorInvalidValue)
    COLL_EMU_ERROR(cudaErrorMemoryAllocation)
    COLL_EMU_ERROR(cudaErrorInvalidConfiguration)
    COLL_EMU_ERROR(cudaErrorInvalidDevice)
    COLL_EMU_ERROR(cudaErrorInvalidResourceHandle)
    COLL_EMU_ERROR(cudaErrorDeviceUninitialized)
    COLL_EMU_ERROR(cudaErrorMapBufferObjectFailed)
    COLL_EMU_ERROR(cudaErrorNotReady)
    COLL_EMU_ERROR(cudaErrorNotSupported)
    COLL_EMU_ERROR(cudaErrorIllegalState)
    COLL_EMU_ERROR(cudaErrorStreamCaptureUnsupported)
    COLL_EMU_ERROR(cudaErrorHostMemoryAlreadyRegistered)
    COLL_EMU_ERROR(cudaErrorHostMemoryNotRegistered)
    COLL_EMU_ERROR(cudaErrorMisalignedAddress)
    COLL_EMU_ERROR(cudaErrorNoDevice)
    COLL_EMU_ERROR(cudaErrorPeerAccessAlreadyEnabled)
#undef COLL_EMU_ERROR
    default: return "cudaErrorUnknown";
  }
}

const char* cudaGetErrorString(cudaError_t e) {
  return e == cudaSuccess ? "no error" : cudaGetErrorName(e);  // the name says it (emulated runtime)
}

cudaError_t cudaRuntimeGetVersion(int* v) {
  if (v == nullptr) return fail(cudaErrorInvalidValue);
  *v = CUDART_VERSION;
  return ok();
}

cudaError_t cudaDriverGetVersion(int* v) { return cudaRuntimeGetVersion(v); }

cudaError_t cudaGetDeviceCount(int* n) {
  if (n == nullptr) return fail(cudaErrorInvalidValue);
  *n = coll::emu::rt::deviceCount();
  return ok();
}

cudaError_t cudaSetDevice(int d) {
  if (d < 0 || d >= coll::emu::rt::deviceCount()) return fail(cudaErrorInvalidDevice);
  coll::emu::rt::tDevice = d;
  return ok();
}

cudaError_t cudaGetDevice(int* d) {
  if (d == nullptr) return fail(cudaErrorInvalidValue);
  *d = coll::emu::rt::tDevice;
  return ok();
}

cudaError_t cudaDeviceGetAttribute(int* value, cudaDeviceAttr attr, int d) {
  if (value == nullptr) return fail(cudaErrorInvalidValue);
  if (d < 0 || d >= coll::emu::rt::deviceCount()) return fail(cudaErrorInvalidDevice);
  switch (attr) {
    case cudaDevAttrMultiProcessorCount: *value = coll::emu::rt::multiprocessors(); return ok();
    case cudaDevAttrComputeCapabilityMajor: *value = 9; return ok();
    case cudaDevAttrComputeCapabilityMinor: *value = 0; return ok();
    case cudaDevAttrPciBusId: *value = d + 1; return ok();
    case cudaDevAttrPciDeviceId: *value = 0; return ok();
    case cudaDevAttrPciDomainId: *value = 0; return ok();
    default: return fail(cudaErrorNotSupported);  // not emulated: say so rather than invent a value
  }
}

cudaError_t cudaGetDeviceProperties(cudaDeviceProp* p, int d) {
  if (p == nullptr) return fail(cudaErrorInvalidValue);
  if (d < 0 || d >= coll::emu::rt::deviceCount()) return fail(cudaErrorInvalidDevice);
  std::memset(p, 0, sizeof *p);
  std::snprintf(p->name, sizeof p->name, "libcoll CUDA emulation (host threads)");
  p->totalGlobalMem = 16ull << 30;
  p->multiProcessorCount = coll::emu::rt::multiprocessors();
  p->major = 9;
  p->minor = 0;
  p->warpSize = 32;
  p->maxThreadsPerBlock = 1024;
  p->pciBusID = d + 1;
  p->unifiedAddressing = 1;
  p->canMapHostMemory = 1;
  return ok();
}

// "0000:BB:00.0" with bus BB = device + 1.
cudaError_t cudaDeviceGetPCIBusId(char* id, int len, int d) {
  if (id == nullptr || len < 13) return fail(cudaErrorInvalidValue);
  if (d < 0 || d >= coll::emu::rt::deviceCount()) return fail(cudaErrorInvalidDevice);
  std::snprintf(id, static_cast<size_t>(len), "0000:%02x:00.0", d + 1);
  return ok();
}

cudaError_t cudaDeviceGetByPCIBusId(int* d, const char* id) {
  unsigned domain = 0, bus = 0, dev = 0, fn = 0;
  if (d == nullptr || id == nullptr || std::sscanf(id, "%x:%x:%x.%x", &domain, &bus, &dev, &fn) != 4 || domain != 0 ||
      bus < 1 || static_cast<int>(bus) > coll::emu::rt::deviceCount() || dev != 0 || fn != 0)
    return fail(cudaErrorInvalidDevice);
  *d = static_cast<int>(bus) - 1;
  return ok();
}

cudaError_t cudaDeviceCanAccessPeer(int* can, int d, int peer) {
  const int n = coll::emu::rt::deviceCount();
  if (can == nullptr) return fail(cudaErrorInvalidValue);
  if (d < 0 || d >= n || peer < 0 || peer >= n) return fail(cudaErrorInvalidDevice);
  *can = d != peer && coll::emu::rt::peerAccess() ? 1 : 0;
  return ok();
}

// As CUDA: from the current device to `peer`, once (a second call fails
// with cudaErrorPeerAccessAlreadyEnabled); the emulated devices share the
// host's memory, so nothing else changes.
cudaError_t cudaDeviceEnablePeerAccess(int peer, unsigned int flags) {
  static std::mutex mu;
  static std::set<std::pair<int, int>> enabled;
  const int n = coll::emu::rt::deviceCount(), d = coll::emu::rt::currentDevice();
  if (flags != 0) return fail(cudaErrorInvalidValue);
  if (peer < 0 || peer >= n) return fail(cudaErrorInvalidDevice);
  if (peer == d || !coll::emu::rt::peerAccess()) return fail(cudaErrorInvalidDevice);
  std::lock_guard<std::mutex> lock(mu);
  if (!enabled.insert({d, peer}).second) return fail(cudaErrorPeerAccessAlreadyEnabled);
  return ok();
}
