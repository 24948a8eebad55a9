// The local path's reduction kernel (libcoll/src/device/local_reduce.cu),
// built for the host against the emulated CUDA runtime (emulation builds
// only) and launched through launchLocalReduce, as the local path launches
// it, on buffers of the emulated device memory (guard pages around each
// allocation: a read or write past a buffer faults).  Bit for bit against
// the host reduction kernels applied input after input: every dtype and op,
// avg, pre-multiplication of some inputs with host or device scalars, 1 to
// 8 inputs and 1 to 8 outputs, an output that is exactly one of the
// inputs, pointers on the 16-byte grid, all off it by the same amount, and
// off it by different amounts (no vector body), counts that leave heads
// and tails.  The same for its copy kernel (one source, up to 8 outputs).
// And the arguments they refuse.
#include <catch2/catch.hpp>

#include <cuda_runtime_api.h>

#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "device/local_reduce.h"
#include "emu_values.h"
#include "test_scale.h"

using coll::device::LocalReduceLaunch;
using coll::device::launchLocalCopy;
using coll::device::launchLocalReduce;
using coll::emutest::kAllDTypes;
using coll::kernels::DType;
using coll::kernels::Op;
using coll::kernels::ReduceFn;
using coll::sched::kLocalFan;

namespace {

constexpr unsigned kMaxBlocks = 8;

#define EMU_OK(x) REQUIRE((x) == cudaSuccess)

// One emulated device allocation; the buffer starts `offset` bytes past its
// 256-byte aligned start.
struct DevBuf {
  void* base = nullptr;
  unsigned char* p = nullptr;
  DevBuf(size_t bytes, size_t offset) {
    EMU_OK(cudaMalloc(&base, bytes + offset + 1));
    p = static_cast<unsigned char*>(base) + offset;
  }
  ~DevBuf() { (void)cudaFree(base); }
  DevBuf(const DevBuf&) = delete;
  DevBuf& operator=(const DevBuf&) = delete;
};

enum class Pre { None, Host, Device };

struct Case {
  DType dtype;
  Op op;
  bool avg;
  Pre pre;
  int nsrc, ndst;
  size_t count;
  int layout;      // 0: on the 16-byte grid; 1: all off it alike; 2: each off it differently
  bool aliased;    // output 0 is the last input
  uint32_t preMask;

  std::string text() const {
    return std::string(coll::kernels::dtypeName(dtype)) + " " + coll::kernels::opName(op) + (avg ? " avg" : "") +
           (pre == Pre::Host ? " pre(host)" : pre == Pre::Device ? " pre(device)" : "") + " mask " +
           std::to_string(preMask) + " nsrc " + std::to_string(nsrc) + " ndst " + std::to_string(ndst) + " count " +
           std::to_string(count) + " layout " + std::to_string(layout) + (aliased ? " aliased" : "");
  }
};

// The kernel's semantics on the host: inputs in order, input k
// pre-multiplied when its mask bit is set (rounded), combined and rounded
// after each step, the post-op with the last; a lone or pre-multiplied
// first input runs through the element code, else its bits are taken.
std::vector<unsigned char> reference(const Case& c, const std::vector<std::vector<unsigned char>>& in,
                                     const ReduceFn& scaled) {
  const size_t es = coll::kernels::dtypeSize(c.dtype), bytes = c.count * es;
  ReduceFn plain = scaled;
  plain.premul = false;
  std::vector<unsigned char> acc(bytes), tmp(bytes);
  for (int k = 0; k < c.nsrc; ++k) {
    const unsigned char* x = in[k].data();
    const bool pre = ((c.preMask >> k) & 1u) != 0;
    if (pre) {
      coll::kernels::reduce(scaled, tmp.data(), nullptr, x, c.count, true, false);
      x = tmp.data();
    }
    const bool last = k == c.nsrc - 1;
    if (k == 0 && c.nsrc > 1 && !pre) std::memcpy(acc.data(), x, bytes);
    else coll::kernels::reduce(plain, acc.data(), k == 0 ? nullptr : acc.data(), x, c.count, false, last);
  }
  return acc;
}

void runCase(const Case& c, std::mt19937_64& rng) {
  INFO(c.text());
  const size_t es = coll::kernels::dtypeSize(c.dtype), bytes = c.count * es;
  auto offsetOf = [&](int k) -> size_t {
    if (c.layout == 0) return 0;
    if (c.layout == 1) return es;
    return es * static_cast<size_t>(1 + k % 3);
  };
  std::vector<std::unique_ptr<DevBuf>> srcBufs, dstBufs;
  std::vector<std::vector<unsigned char>> in(c.nsrc, std::vector<unsigned char>(bytes));
  LocalReduceLaunch l;
  l.dtype = c.dtype;
  l.op = c.op;
  l.nsrc = c.nsrc;
  l.ndst = c.ndst;
  l.count = c.count;
  l.preMask = c.preMask;
  ReduceFn fn;
  fn.dtype = c.dtype;
  fn.op = c.op;
  fn.premul = c.pre != Pre::None;
  fn = coll::emutest::withTestScalar(fn);
  if (c.avg) {
    fn.divisor = static_cast<uint64_t>(c.nsrc);
    l.divisor = fn.divisor;
  }
  DevBuf scalar(8, 0);
  coll::emutest::storeTestScalar(c.dtype, scalar.p);  // emulated device memory is host memory
  for (int k = 0; k < c.nsrc; ++k) {
    for (unsigned char& b : in[k]) b = static_cast<unsigned char>(rng());
    if (c.dtype == DType::Float32 || c.dtype == DType::Float64)  // keep most values finite and rounding
      for (size_t i = 0; i < c.count; ++i) {
        const double v = std::uniform_real_distribution<double>(-100.0, 100.0)(rng);
        if (c.dtype == DType::Float32) {
          const float f = static_cast<float>(v);
          std::memcpy(in[k].data() + i * 4, &f, 4);
        } else {
          std::memcpy(in[k].data() + i * 8, &v, 8);
        }
      }
    srcBufs.push_back(std::make_unique<DevBuf>(bytes, offsetOf(k)));
    EMU_OK(cudaMemcpy(srcBufs.back()->p, in[k].data(), bytes, cudaMemcpyHostToDevice));
    l.src[k] = srcBufs.back()->p;
    if (((c.preMask >> k) & 1u) != 0) {
      l.scalarPtr[k] = c.pre == Pre::Device ? scalar.p : nullptr;
      l.scalarBits[k] = c.pre == Pre::Host ? coll::device::hostScalarBits(c.dtype, fn.scalar) : 0;
    }
  }
  for (int k = 0; k < c.ndst; ++k) {
    if (k == 0 && c.aliased) {
      l.dst[0] = const_cast<void*>(l.src[c.nsrc - 1]);
      continue;
    }
    dstBufs.push_back(std::make_unique<DevBuf>(bytes, offsetOf(k + 1)));
    std::memset(dstBufs.back()->p, 0xEE, bytes);
    l.dst[k] = dstBufs.back()->p;
  }
  const std::vector<unsigned char> want = reference(c, in, fn);
  cudaStream_t s = nullptr;
  EMU_OK(cudaStreamCreate(&s));
  EMU_OK(launchLocalReduce(l, kMaxBlocks, s));
  EMU_OK(cudaStreamSynchronize(s));
  EMU_OK(cudaStreamDestroy(s));
  std::vector<unsigned char> got(bytes);
  for (int k = 0; k < c.ndst; ++k) {
    if (bytes > 0) EMU_OK(cudaMemcpy(got.data(), l.dst[k], bytes, cudaMemcpyDeviceToHost));
    for (size_t i = 0; i < c.count; ++i)
      if (std::memcmp(got.data() + i * es, want.data() + i * es, es) != 0)
        FAIL("output " << k << " element " << i << " differs from the host reference: got 0x" << std::hex
             << int(got[i * es]) << " want 0x" << int(want[i * es]) << " input 0 0x" << int(in[0][i * es]));
  }
}

}  // namespace

TEST_CASE("local reduce kernel: every dtype and op, 1-8 inputs and outputs, bit for bit", "[local_reduce]") {
  std::mt19937_64 rng(20261128);
  long cases = 0;
  const Op ops[] = {Op::Sum, Op::Prod, Op::Max, Op::Min};
  for (DType t : kAllDTypes)
    for (int variant = 0; variant < 7; ++variant) {  // sum prod max min, avg, pre-mul host, pre-mul device
      const Op op = variant < 4 ? ops[variant] : Op::Sum;
      const bool avg = variant == 4;
      const Pre pre = variant == 5 ? Pre::Host : variant == 6 ? Pre::Device : Pre::None;
      // Sanitizer builds: every dtype with a plain sum and with a device
      // scalar (the element sizes, which a bad access depends on), every
      // variant on float32; the plain build runs them all for the values.
      if (coll::testing::kSanitizedBuild && variant != 0 && variant != 6 && t != DType::Float32) continue;
      for (int nsrc : {1, 2, 3, kLocalFan})
        for (int layout = 0; layout < 3; ++layout)
          for (size_t count : {size_t{1}, size_t{5}, size_t{1031}}) {
            const int ndst = (nsrc + layout) % kLocalFan + 1;
            // Pre-multiply every input, or every other one from input 1 on
            // (a chain's accumulator, input 0, has none).
            const uint32_t mask = pre == Pre::None ? 0 : layout == 1 ? 0xAAu & ((1u << nsrc) - 1) : (1u << nsrc) - 1;
            runCase(Case{t, op, avg, pre, nsrc, ndst, count, layout, layout == 2, mask}, rng);
            ++cases;
          }
    }
  // Sizes with many vectors per thread and several blocks.
  for (DType t : {DType::Float32, DType::Bfloat16, DType::Int8})
    for (int layout = 0; layout < 3; ++layout) {
      runCase(Case{t, Op::Sum, true, Pre::None, 5, 4, 70001, layout, true, 0}, rng);
      runCase(Case{t, Op::Sum, false, Pre::Device, 4, 2, 70001, layout, false, 0xFu}, rng);
      cases += 2;
    }
  INFO(cases << " cases");
  CHECK(cases > 1000);
}

TEST_CASE("local reduce kernel: count 0 launches nothing; bad arguments are refused", "[local_reduce]") {
  DevBuf a(64, 0), b(64, 0);
  LocalReduceLaunch l;
  l.nsrc = 2;
  l.ndst = 1;
  l.src[0] = a.p;
  l.src[1] = b.p;
  l.dst[0] = a.p;
  l.count = 0;
  cudaStream_t s = nullptr;
  EMU_OK(cudaStreamCreate(&s));
  CHECK(launchLocalReduce(l, kMaxBlocks, s) == cudaSuccess);
  l.count = 8;
  CHECK(launchLocalReduce(l, kMaxBlocks, s) == cudaSuccess);  // output exactly input 0
  LocalReduceLaunch bad = l;
  bad.dst[0] = a.p + 4;  // overlaps input 0 partially
  CHECK(launchLocalReduce(bad, kMaxBlocks, s) == cudaErrorInvalidValue);
  bad = l;
  bad.src[1] = b.p + 1;  // not on a float's boundary
  CHECK(launchLocalReduce(bad, kMaxBlocks, s) == cudaErrorMisalignedAddress);
  bad = l;
  bad.nsrc = 0;
  CHECK(launchLocalReduce(bad, kMaxBlocks, s) == cudaErrorInvalidValue);
  bad = l;
  bad.ndst = kLocalFan + 1;
  CHECK(launchLocalReduce(bad, kMaxBlocks, s) == cudaErrorInvalidValue);
  bad = l;
  bad.preMask = 4;  // names an input past nsrc
  CHECK(launchLocalReduce(bad, kMaxBlocks, s) == cudaErrorInvalidValue);
  bad = l;
  bad.preMask = 1;
  bad.op = Op::Max;  // pre-multiplication is a sum's
  CHECK(launchLocalReduce(bad, kMaxBlocks, s) == cudaErrorInvalidValue);
  bad = l;
  bad.src[1] = nullptr;
  CHECK(launchLocalReduce(bad, kMaxBlocks, s) == cudaErrorInvalidValue);
  EMU_OK(cudaStreamSynchronize(s));
  EMU_OK(cudaStreamDestroy(s));
}

TEST_CASE("local copy kernel: one source to 1-8 outputs, on and off the 16-byte grid", "[local_reduce]") {
  std::mt19937_64 rng(7);
  cudaStream_t s = nullptr;
  EMU_OK(cudaStreamCreate(&s));
  for (size_t bytes : {size_t{1}, size_t{15}, size_t{16}, size_t{33}, size_t{4099}, size_t{300007}})
    for (int ndst : {1, 2, 5, kLocalFan})
      for (int layout = 0; layout < 3; ++layout) {  // aligned; all off by 3; each off differently
        INFO(bytes << " bytes to " << ndst << " outputs, layout " << layout);
        auto offsetOf = [&](int k) -> size_t { return layout == 0 ? 0 : layout == 1 ? 3 : static_cast<size_t>(k % 5); };
        std::vector<unsigned char> want(bytes);
        for (unsigned char& b : want) b = static_cast<unsigned char>(rng());
        DevBuf src(bytes, offsetOf(0));
        EMU_OK(cudaMemcpy(src.p, want.data(), bytes, cudaMemcpyHostToDevice));
        std::vector<std::unique_ptr<DevBuf>> outs;
        void* dst[kLocalFan] = {};
        for (int k = 0; k < ndst; ++k) {
          outs.push_back(std::make_unique<DevBuf>(bytes, offsetOf(k + 1)));
          std::memset(outs.back()->p, 0xEE, bytes);
          dst[k] = outs.back()->p;
        }
        EMU_OK(launchLocalCopy(src.p, dst, ndst, bytes, kMaxBlocks, s));
        EMU_OK(cudaStreamSynchronize(s));
        std::vector<unsigned char> got(bytes);
        for (int k = 0; k < ndst; ++k) {
          EMU_OK(cudaMemcpy(got.data(), dst[k], bytes, cudaMemcpyDeviceToHost));
          if (got != want) FAIL("output " << k << " differs from the source");
        }
      }
  DevBuf a(64, 0), b(64, 0);
  void* one[1] = {b.p};
  CHECK(launchLocalCopy(a.p, one, 1, 0, kMaxBlocks, s) == cudaSuccess);
  one[0] = a.p;  // the source itself
  CHECK(launchLocalCopy(a.p, one, 1, 64, kMaxBlocks, s) == cudaErrorInvalidValue);
  one[0] = a.p + 16;  // overlapping it
  CHECK(launchLocalCopy(a.p, one, 1, 32, kMaxBlocks, s) == cudaErrorInvalidValue);
  CHECK(launchLocalCopy(a.p, one, 0, 32, kMaxBlocks, s) == cudaErrorInvalidValue);
  EMU_OK(cudaStreamSynchronize(s));
  EMU_OK(cudaStreamDestroy(s));
}
