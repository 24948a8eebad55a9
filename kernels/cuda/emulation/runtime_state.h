// runtime_state.h — the emulated CUDA runtime's shared internals (this
// folder's runtime_*.cc): streams with worker threads, graphs, the thread's
// last error, the memory registry and the emulated devices.  Nothing here
// is seen by the code the emulation runs: it sees cuda_runtime_api.h.
#pragma once

#include <cuda_runtime_api.h>

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "cuda_emulation.h"

// The opaque handle types of the runtime API, defined here.
struct CUgraphNode_st {
  coll::emu::NodeKind kind;
  std::function<void()> work;
};

struct CUgraph_st {
  std::deque<CUgraphNode_st> nodes;  // deque: node handles stay valid as nodes are added
};

struct CUgraphExec_st {
  std::vector<CUgraphNode_st> nodes;
};

// A stream: a worker thread runs its work in order.  ops counts work queued,
// done the work finished; a waiter wants done to reach the ops it saw.
struct CUstream_st {
  explicit CUstream_st(unsigned flags);
  ~CUstream_st();
  // Queues work of `cost` queue slots (streamDepth); waits for room first.
  void push(std::function<void()> work, int cost);
  void waitFor(uint64_t ticket);  // until done >= ticket
  uint64_t ticket();              // the ops queued so far
  bool idle();

  const unsigned flags;
  CUgraph_st* capturing = nullptr;  // set between BeginCapture and EndCapture (caller's thread only)

 private:
  void run();
  std::mutex m_;
  std::condition_variable cv_;
  struct Work {
    std::function<void()> run;
    int cost;
  };
  std::deque<Work> queue_;
  uint64_t ops_ = 0, done_ = 0;
  int64_t load_ = 0;  // the queue slots of the work not done yet (the running one's too)
  bool stop_ = false;
  std::thread worker_;
};

struct CUevent_st {
  std::mutex m;
  std::condition_variable cv;
  uint64_t recorded = 0, completed = 0;  // records issued / reached by their stream
  double ms = 0;                         // when the last completed record was reached
};

namespace coll::emu::rt {

// Sets the calling thread's last error (cudaGetLastError) and returns e.
cudaError_t fail(cudaError_t e);
inline cudaError_t ok() { return cudaSuccess; }

// The stream a handle names: nullptr, cudaStreamLegacy and
// cudaStreamPerThread all name the one legacy default stream.
CUstream_st* resolve(cudaStream_t s);
// Waits for every stream's queued work (cudaDeviceSynchronize).
void synchronizeAll();
// Milliseconds since the process started (event times).
double nowMs();

// Memory the runtime handed out, by kind.
enum class MemKind { Device, Pinned, Registered, PeerMapping };
struct Region {
  char* begin = nullptr;
  size_t bytes = 0;
  MemKind kind = MemKind::Device;
  int device = 0;
};
// The region that holds p (false if none).
bool findRegion(const void* p, Region* out);

// Emulated devices: COLL_EMU_DEVICES (default 1), COLL_EMU_SMS
// multiprocessors each (default 4), COLL_EMU_PEER_ACCESS=0 to deny peer
// access between them (default 1).
int deviceCount();
// Queue slots a stream holds before an enqueue blocks: COLL_EMU_STREAM_DEPTH
// (default 1021), and the slots one operation takes (runtime_device.cc says
// why).
int streamDepth();
int streamSlots(coll::emu::NodeKind kind);
int currentDevice();
int multiprocessors();
bool peerAccess();

}  // namespace coll::emu::rt
