// device_reduce.cc — argument checks, layout (head / vectors / tail), grid
// size and the per-dtype launch.  Plain C++ against the CUDA runtime API.
#include "coll/device_reduce.h"

#include <algorithm>
#include <atomic>
#include <cstring>

#include "launch.h"

namespace coll::kernels {
// The host scalar in the kernel's compute type, converted exactly as the host
// reference converts it (C(f.scalar.f) / C(f.scalar.i) / C(f.scalar.u)).
namespace {
template <class C> uint64_t bitsOfCompute(C v) {
  uint64_t bits = 0;
  memcpy(&bits, &v, sizeof v);
  return bits;
}
}  // namespace

uint64_t device::computeScalarBits(DType t, const Scalar& s) {
  switch (t) {
    case DType::Int8: return bitsOfCompute(int8_t(s.i));
    case DType::Uint8: return bitsOfCompute(uint8_t(s.u));
    case DType::Int32: return bitsOfCompute(int32_t(s.i));
    case DType::Uint32: return bitsOfCompute(uint32_t(s.u));
    case DType::Int64: return bitsOfCompute(int64_t(s.i));
    case DType::Uint64: return bitsOfCompute(uint64_t(s.u));
    case DType::Float64: return bitsOfCompute(double(s.f));
    default: return bitsOfCompute(float(s.f));  // float32, fp16, bf16, fp8: compute in float
  }
}

namespace {

using device::LaunchArgs;

constexpr unsigned kBlock = 256;
constexpr unsigned kBlocksPerSm = 8;  // 2048 threads per SM at 256 per block
constexpr int kUnroll = 4;            // vectors per thread per step (reduce_impl.cuh)

bool validDtype(DType t) { return static_cast<unsigned>(t) < static_cast<unsigned>(kNumDTypes); }
bool validOp(Op o) { return static_cast<unsigned>(o) < static_cast<unsigned>(kNumOps); }

bool isFloating(DType t) {
  switch (t) {
    case DType::Float16: case DType::Float32: case DType::Float64: case DType::Bfloat16:
    case DType::Fp8E4M3: case DType::Fp8E5M2: return true;
    default: return false;
  }
}

// Multiprocessor count of the current device, cached per device ordinal.
unsigned smCount() {
  static std::atomic<int> cache[64] = {};
  int dev = 0;
  if (cudaGetDevice(&dev) != cudaSuccess) return 1;
  if (dev >= 0 && dev < 64) {
    const int c = cache[dev].load(std::memory_order_relaxed);
    if (c > 0) return static_cast<unsigned>(c);
  }
  int n = 0;
  if (cudaDeviceGetAttribute(&n, cudaDevAttrMultiProcessorCount, dev) != cudaSuccess || n <= 0) {
    (void)cudaGetLastError();  // do not leave the error for the caller's next check
    n = 1;
  }
  if (dev >= 0 && dev < 64) cache[dev].store(n, std::memory_order_relaxed);
  return static_cast<unsigned>(n);
}

bool partialOverlap(const void* x, const void* y, size_t bytes) {
  if (x == nullptr || y == nullptr || x == y) return false;
  const auto px = reinterpret_cast<uintptr_t>(x), py = reinterpret_cast<uintptr_t>(y);
  return px < py + bytes && py < px + bytes;
}

cudaError_t launch(DType t, const LaunchArgs& args) {
  switch (t) {
#define COLL_DEVICE_CASE(D) case DType::D: return device::launchReduce<DType::D>(args);
    COLL_DEVICE_DTYPES(COLL_DEVICE_CASE)
#undef COLL_DEVICE_CASE
  }
  return cudaErrorInvalidValue;
}

}  // namespace

cudaError_t collDeviceReduceLoad() {
  const cudaError_t each[] = {
#define COLL_DEVICE_LOAD(D) device::loadReduce<DType::D>(),
      COLL_DEVICE_DTYPES(COLL_DEVICE_LOAD)
#undef COLL_DEVICE_LOAD
  };
  for (const cudaError_t e : each)
    if (e != cudaSuccess) return e;
  return cudaSuccess;
}

namespace {

struct Request {
  void* dst;
  const void* a;
  const void* b;
  size_t count;
  DType dtype;
  Op op;
  bool pre;
  const void* scalarPtr;  // pre from device memory
  Scalar scalar;          // pre from the host
  uint64_t divisor;       // 0 = no post
  cudaStream_t stream;
};

cudaError_t run(const Request& r) {
  if (!validDtype(r.dtype) || !validOp(r.op)) return cudaErrorInvalidValue;
  if (r.count == 0) return cudaSuccess;
  const size_t es = dtypeSize(r.dtype);
  if (r.dst == nullptr || r.b == nullptr) return cudaErrorInvalidValue;
  if (r.count > (SIZE_MAX / 2) / es) return cudaErrorInvalidValue;
  const size_t bytes = r.count * es;
  const auto pd = reinterpret_cast<uintptr_t>(r.dst), pa = reinterpret_cast<uintptr_t>(r.a),
             pb = reinterpret_cast<uintptr_t>(r.b), ps = reinterpret_cast<uintptr_t>(r.scalarPtr);
  if ((pd | pa | pb | ps) % es != 0) return cudaErrorMisalignedAddress;
  if (partialOverlap(r.dst, r.a, bytes) || partialOverlap(r.dst, r.b, bytes)) return cudaErrorInvalidValue;

  const bool hasA = r.a != nullptr;
  const bool post = r.divisor != 0;
  // Copy of an integer type: no rounding, no NaN to canonicalise (the host
  // does a memmove here too).
  if (!hasA && !r.pre && !post && !isFloating(r.dtype)) {
    if (r.dst == r.b) return cudaSuccess;
    return cudaMemcpyAsync(r.dst, r.b, bytes, cudaMemcpyDeviceToDevice, r.stream);
  }

  LaunchArgs args;
  args.dst = r.dst;
  args.a = r.a;
  args.b = r.b;
  args.op = hasA ? r.op : Op::Sum;
  args.flags = (hasA ? device::kHasA : 0u) | (r.pre ? device::kPre : 0u) | (post ? device::kPost : 0u);
  args.scalarPtr = r.pre ? r.scalarPtr : nullptr;
  args.scalarBits = r.pre && r.scalarPtr == nullptr ? device::computeScalarBits(r.dtype, r.scalar) : 0;
  args.divisor = r.divisor;
  args.stream = r.stream;

  // Widest vector all pointers agree on (same offset modulo its size).
  const bool simple = args.flags == device::kHasA;
  const uintptr_t diff = (pd ^ pb) | (hasA ? (pd ^ pa) : 0);
  int vb = static_cast<int>(es);
  for (int w : {16, 8, 4}) {
    if (device::vecWidthSupported(es, w, simple) && diff % static_cast<uintptr_t>(w) == 0) {
      vb = w;
      break;
    }
  }
  const size_t lanes = static_cast<size_t>(vb) / es;
  const size_t misalign = pd % static_cast<uintptr_t>(vb);
  size_t head = misalign == 0 ? 0 : (static_cast<size_t>(vb) - misalign) / es;
  head = std::min(head, r.count);
  args.head = head;
  args.nvec = (r.count - head) / lanes;
  args.tail = (r.count - head) % lanes;
  args.vecBytes = vb;

  // Enough threads for every vector (kUnroll per thread) and leftover
  // element, at most a full device's worth; the loop strides over the rest.
  const size_t work = std::max({(args.nvec + kUnroll - 1) / kUnroll, args.head, args.tail, size_t{1}});
  const size_t wantBlocks = (work + kBlock - 1) / kBlock;
  const size_t maxBlocks = static_cast<size_t>(smCount()) * kBlocksPerSm;
  args.grid = static_cast<unsigned>(std::min(wantBlocks, maxBlocks));
  args.block = kBlock;
  return launch(r.dtype, args);
}

}  // namespace

cudaError_t collDeviceReduce(void* dst, const void* a, const void* b, size_t count, DType dtype, Op op,
                             const ScalarArg& scalar, cudaStream_t stream) {
  Request r{};
  r.dst = dst;
  r.a = a;
  r.b = b;
  r.count = count;
  r.dtype = dtype;
  r.op = op;
  switch (scalar.residence) {
    case ScalarArg::Residence::None: r.pre = false; break;
    case ScalarArg::Residence::Host: r.pre = true; r.scalar = scalar.host; break;
    case ScalarArg::Residence::Device:
      if (scalar.device == nullptr) return cudaErrorInvalidValue;
      r.pre = true;
      r.scalarPtr = scalar.device;
      break;
    default: return cudaErrorInvalidValue;
  }
  r.divisor = scalar.divisor;
  r.stream = stream;
  return run(r);
}

cudaError_t collDeviceReduce(const ReduceFn& fn, void* dst, const void* a, const void* b, size_t count,
                             bool applyPre, bool applyPost, const void* deviceScalar, cudaStream_t stream) {
  Request r{};
  r.dst = dst;
  r.a = a;
  r.b = b;
  r.count = count;
  r.dtype = fn.dtype;
  r.op = fn.op;
  r.pre = applyPre && fn.premul;
  r.scalarPtr = r.pre ? deviceScalar : nullptr;
  r.scalar = fn.scalar;
  r.divisor = applyPost ? fn.divisor : 0;
  r.stream = stream;
  return run(r);
}

}  // namespace coll::kernels
