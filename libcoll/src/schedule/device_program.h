// device_program.h — the device collectives as data: a program of steps that
// one CUDA kernel (libcoll/src/device/program_kernel.cu) interprets, built
// here by pure functions so that tests can run it on the host
// (tests/schedule/device_program_test.cc) without a GPU.
//
// Every rank owns two staging regions of regionBytes (input, result) that
// every other rank can read (transports/p2p).  A step copies, stages
// (copies with the call's pre-multiplication), reduces every rank's region
// at one offset into a destination, or is a barrier.  A rank only ever
// writes its own regions and its own user buffers; it reads peers' regions.
//
// The kernel runs the same step list in `channels` blocks.  Block b of a
// rank does its chunks (channelChunk) of every data step, and its barriers
// wait only for block b of the other ranks, so blocks never wait for each
// other: a launch needs no grid-wide synchronisation.
//
// The part of this header above `#if !defined(__CUDACC__)` is also compiled
// by nvcc (the kernel reads DevStep and calls channelChunk).
#pragma once

#include <cstddef>
#include <cstdint>

#if defined(__CUDACC__)
#define COLL_PROGRAM_HD __host__ __device__
#else
#define COLL_PROGRAM_HD
#endif

namespace coll::sched {

enum class DevBuf : uint8_t {
  Send = 0,    // the call's sendbuff (this rank's)
  Recv = 1,    // the call's recvbuff (this rank's)
  Input = 2,   // rank srcRank's input region (dst: this rank's)
  Result = 3,  // rank srcRank's result region (dst: this rank's)
};

enum class DevStepKind : uint8_t {
  Copy = 0,     // dst = src, count elements
  Stage = 1,    // dst = pre(src): the call's pre-multiplication, or a copy
  Reduce = 2,   // dst = post(region_0 op region_1 op ... op region_{N-1}), every
                // rank's `src` region at srcOff, in rank order
  Barrier = 3,  // wait for every rank's same block to arrive here
};

struct DevStep {
  DevStepKind kind = DevStepKind::Barrier;
  uint8_t call = 0;  // index of the call in the launch (its buffers, dtype, signature)
  DevBuf dst = DevBuf::Recv;
  DevBuf src = DevBuf::Send;
  int32_t srcRank = 0;  // src Input/Result: whose region (Reduce: every rank's)
  uint64_t dstOff = 0;  // bytes
  uint64_t srcOff = 0;  // bytes
  uint64_t count = 0;   // elements of the call's dtype
};

// Which block does what.  A step's bytes are cut at the multiples of `unit`
// (a power of two, >= 1 KiB) of its anchor address: the offset of the
// staging region it touches (its source region, else its destination
// region; a step without one uses its own byte index).  Unit u goes to block
// u mod channels.  So every byte of a staging region is handled by the same
// block in every step of a launch, whichever rank, piece or call the step
// belongs to; with the per-block barriers that orders every access to it
// (what the simulator test checks).  A rank's user buffers follow the region
// bytes they are staged from or gathered to, so they get the same block too.
COLL_PROGRAM_HD inline uint64_t stepAnchor(const DevStep& s) {
  if (s.src == DevBuf::Input || s.src == DevBuf::Result) return s.srcOff;
  if (s.dst == DevBuf::Input || s.dst == DevBuf::Result) return s.dstOff;
  return 0;
}

// Block `channel`'s k-th chunk of step s (elements of elemSize bytes):
// bytes [*lo, *hi) from the step's start.  False when it has no k-th chunk.
COLL_PROGRAM_HD inline bool channelChunk(const DevStep& s, uint32_t elemSize, uint64_t unit, int channels, int channel,
                                         uint64_t k, uint64_t* lo, uint64_t* hi) {
  const uint64_t bytes = s.count * elemSize;
  if (bytes == 0) return false;
  const uint64_t a0 = stepAnchor(s), first = a0 / unit, last = (a0 + bytes - 1) / unit;
  const uint64_t nch = static_cast<uint64_t>(channels), ch = static_cast<uint64_t>(channel);
  const uint64_t u = first + (ch + nch - first % nch) % nch + k * nch;
  if (u > last) return false;
  const uint64_t b = u * unit, e = b + unit;
  *lo = (b > a0 ? b : a0) - a0;
  *hi = (e < a0 + bytes ? e : a0 + bytes) - a0;
  return true;
}

}  // namespace coll::sched

#if !defined(__CUDACC__)
#include <vector>

#include "schedule/schedules.h"

namespace coll::sched {

// One call as the program builders see it.
struct DevProgramCall {
  CollKind kind = CollKind::AllReduce;  // AllReduce .. Reduce
  uint64_t count = 0;                   // the C API's count
  uint32_t elemSize = 4;
  int root = 0;
};

// At or below this many bytes per piece a device all-reduce is one-shot
// (every rank reduces the whole piece from every region: fewer barriers,
// more reads); above it reduce-scatter + all-gather through the regions.
// Both ways of the device path cut by it (this program and the stream
// operations of libcoll/src/device/device_collectives.cc).
constexpr size_t kDeviceOneShotBytes = 256 << 10;

// Appends call `c`'s steps (tagged with call index `callIndex`) for `rank`
// of nranks, in pieces of at most regionBytes.  Every piece ends with a
// barrier, so no rank refills a region while a peer may still read it, and
// a program never ends with a region access after its last barrier.
// Returns false when the call cannot be run through regions of this size (a
// reduce-scatter whose region holds fewer than nranks elements).
// Pieces of at most oneShotBytes all-reduce one-shot.
bool appendDeviceProgram(std::vector<DevStep>& out, const DevProgramCall& c, uint8_t callIndex, int rank, int nranks,
                         size_t regionBytes, size_t oneShotBytes = kDeviceOneShotBytes);

// Every rank's program for the same calls has the same length and its
// barriers at the same indices (a rank with nothing to do in a step gets the
// step with count 0), so ranks cut their programs alike.
//
// The chunk unit of a launch whose calls move at most maxPieceBytes per
// piece: 32 KiB, or less when that would leave blocks idle (every rank
// computes the same value from the same calls).
uint64_t programUnit(uint64_t maxPieceBytes, int channels);

// Cuts a program into launches of at most maxSteps steps, each ending with
// a barrier, and a launch beginning at every index in `startsAt` (ascending;
// each just after a barrier: where a call that depends on an earlier one
// begins, call_memory.h).  Returns the end index of each launch; empty when
// some stretch between two barriers alone has more than maxSteps steps, or
// a start in startsAt does not follow a barrier.
std::vector<size_t> splitProgram(const std::vector<DevStep>& steps, size_t maxSteps,
                                 const std::vector<size_t>& startsAt = {});

}  // namespace coll::sched
#endif
