// runtime_state.h — the emulated CUDA runtime's shared internals (this
// folder's runtime_*.cc): streams with worker threads, graphs, the thread's
// last error, the memory registry and the emulated devices.  Nothing here
// is seen by the code the emulation runs: it sees cuda_runtime_api.h.
#pragma once

#include <cuda_runtime_api.h>

#include <atomic>
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
  std::function<void()> work;     // what a launch runs (not for an event node)
  struct CUevent_st* event = nullptr;  // an event record / wait node's event: launched as a live record / wait
};

// One step of a stream that captured into a graph: run one of the graph's
// nodes, or mark / wait for a point of another captured stream (an event
// recorded / waited on during the capture: CUDA turns those into edges
// between nodes, not into nodes).
struct CaptureStep {
  enum class Kind { Node, Signal, Wait } kind;
  size_t index;  // the node's (Node) or the signal's (Signal, Wait)
};

// The work of each stream that captured into the graph, in its order: lane
// 0 the stream that began the capture, then one per stream that joined it
// by waiting on an event recorded in it (runtime_graphs.cc).
struct CaptureLanes {
  std::vector<std::vector<CaptureStep>> lanes{1};
  size_t signals = 0;
};

struct CUgraph_st {
  std::deque<CUgraphNode_st> nodes;  // deque: node handles stay valid as nodes are added
  CaptureLanes order;
};

struct CUgraphExec_st;  // runtime_graphs.cc

// A capture in progress: its graph and the streams capturing into it (the
// origin first).  Lives from BeginCapture to EndCapture.
struct CaptureState {
  CUgraph_st* graph = nullptr;
  unsigned long long id = 0;
  std::vector<struct CUstream_st*> members;
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
  // The capture this stream's work goes to, and its lane there: set while
  // it captures (changed under rt::captureMutex()).
  std::atomic<CaptureState*> capture{nullptr};
  size_t lane = 0;
  // The hardware work queue it shares with other streams (workQueues()), or
  // -1 (its own); set when made.
  int queue = -1;

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
  // Set when the last record was in a capture: that capture, and the
  // signal it marks in the graph (0: recorded outside any capture).
  unsigned long long captureId = 0;
  size_t signal = 0;
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

// Stream capture (runtime_graphs.cc).  All of it under captureMutex().
std::mutex& captureMutex();
// Appends work to the graph s captures into.
void captureAppend(CUstream_st* s, coll::emu::NodeKind kind, std::function<void()> work);
// cudaEventRecord(e, s) while s captures.
cudaError_t captureRecord(CUevent_st* e, CUstream_st* s);
// cudaStreamWaitEvent(s, e) when s captures or e was recorded in a capture.
cudaError_t captureWait(CUstream_st* s, CUevent_st* e);
// s is being destroyed: ends the capture it began, or leaves the one it joined.
void captureStreamGone(CUstream_st* s);
// An event record or wait node (cudaEventRecordExternal / cudaEventWaitExternal
// while s captures): kind Event or EventWait.
void captureEventNode(CUstream_st* s, coll::emu::NodeKind kind, CUevent_st* e);

// cudaEventRecord / cudaStreamWaitEvent outside a capture (and what a graph's
// event nodes do when it is launched: its record counts from the launch on).
cudaError_t recordLive(CUevent_st* e, cudaStream_t s);
cudaError_t waitLive(cudaStream_t s, CUevent_st* e);

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
int workQueues();  // COLL_EMU_WORK_QUEUES: 0, or the hardware queues streams share
int currentDevice();
int multiprocessors();
bool peerAccess();

}  // namespace coll::emu::rt
