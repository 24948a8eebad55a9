// program_kernel.h — one kernel that runs a device program
// (schedule/device_program.h): the steps of one or more collectives of a
// communicator, for one stream, in a single launch.
//
// The launch has `channels` blocks.  Block b does its chunks of every data
// step (sched::channelChunk) and meets block b of every other rank at each
// barrier step, through its own flag words: channel b's 256 B control area
// in each rank's P2P block, laid out like a rank's control block
// (peer_barrier.h: flag, count, signature slots).  Blocks never wait for one
// another, so the kernel needs no grid-wide synchronisation; it needs the
// blocks of all ranks on a GPU to be resident together, which the caller
// ensures by giving each rank at most SMs / (2 x ranks on the GPU) channels
// (two launches per rank may be in flight: two communicators' streams).
// More concurrent launches than that can wait for each other until the
// timeout, which then names the ranks whose blocks never ran.
//
// Every barrier compares the calls' signatures and is bounded by the
// timeout like the barrier kernel's; a block that meets a failure stops and
// writes nothing more (the communicator refuses later calls).
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

#include "coll/kernels/reduce.h"
#include "p2p/peer_barrier.h"
#include "schedule/device_program.h"

namespace coll::device {

constexpr int kMaxProgramCalls = 32;    // calls per launch
constexpr int kMaxProgramSteps = 256;   // steps per launch (kernel parameter space: ~10 KB)
// Blocks per launch.  A block takes a whole SM (512 threads, ~100
// registers each), so a rank alone on a 132-SM H100/H200 gets up to 64 by
// default (SMs / 2, device_comm.cc) and a 2-rank launch may be given 64 by
// COLL_DEVICE_CHANNELS: more loads in flight for the large calls.
constexpr int kMaxChannels = 64;
constexpr size_t kChannelStride = 256;  // bytes of one channel's control area
// Larger communicators keep the stream-operation path: an all-reduce piece
// is 2N + 4 steps, which must fit one launch.
constexpr int kMaxProgramRanks = 64;

// What the kernel needs of one call.
struct ProgramCall {
  const void* send = nullptr;
  void* recv = nullptr;
  const void* deviceScalar = nullptr;  // pre-mul scalar in device memory, or null
  uint64_t scalarBits = 0;             // host pre-mul scalar in the compute type
  uint64_t divisor = 0;                // post-divide (avg), 0: none
  p2p::CallSig sig;                    // compared at every barrier of the call
  uint32_t elemSize = 1;
  uint32_t premul = 0;
};

struct ProgramLaunch {
  kernels::DType dtype = kernels::DType::Uint8;  // of every reducing call in the launch
  kernels::Op op = kernels::Op::Sum;
  int nranks = 1;
  int rank = 0;
  int channels = 1;
  uint64_t unit = 1024;               // sched::programUnit
  char* const* bases = nullptr;       // device array: rank r's P2P block, as mapped here
  uint64_t inputOffset = 0;           // the staging regions in a block
  uint64_t resultOffset = 0;
  uint64_t channelOffset = 0;         // channel 0's control area in a block
  unsigned long long timeoutNs = ~0ull;
  unsigned long long* error = nullptr;  // host-mapped error record (peer_barrier.h)
  unsigned long long* control = nullptr;  // this rank's control block (its mismatch claim word)
  int ncalls = 0;
  int nsteps = 0;
  ProgramCall calls[kMaxProgramCalls];
  sched::DevStep steps[kMaxProgramSteps];
};

// Threads per block of a launch, and the launch's dynamic shared memory
// (every rank's block base, flag pointer and control block).
constexpr unsigned kProgramThreads = 512;
constexpr size_t programSharedBytes(int nranks) { return 3 * static_cast<size_t>(nranks) * sizeof(void*); }

// Enqueues the launch on s.  cudaErrorInvalidValue for a bad dtype/op,
// channel count or size.
cudaError_t launchProgram(const ProgramLaunch& l, cudaStream_t s);
// Loads every dtype and op's program kernel now (device/kernel_loading.h).
cudaError_t loadProgramKernels();

}  // namespace coll::device
