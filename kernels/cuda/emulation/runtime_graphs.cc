// runtime_graphs.cc — the emulated runtime's stream capture and graphs.
//
// A capture records each capturing stream's work as a lane of steps
// (runtime_state.h): lane 0 is the stream that began it; a stream joins by
// waiting on an event recorded in the capture (the fork), and leaves when
// the capture ends, which requires every lane's work to be joined back into
// the origin by events, as CUDA requires (cudaErrorStreamCaptureUnjoined).
// An event recorded outside the capture cannot be waited on inside it, nor
// one of another capture (cudaErrorStreamCaptureIsolation / Merge): those
// would be dependencies that cross the capture's boundary.
//
// cudaEventRecordExternal / cudaEventWaitExternal make event record / wait
// nodes instead, which a launch turns into a live record / wait as of the
// launch: a wait node waits for the event's last record before the launch,
// and a later cudaStreamWaitEvent waits for the graph's record.
//
// A launch runs lane 0 on the launch stream and every other lane on a
// stream of the executable graph's own, so the lanes run at once, as a
// graph's unordered nodes may on a GPU; signals and waits are their only
// order.  (A graph whose lanes hold more than a stream's depth of work
// could fill a stream whose worker waits for another lane not yet queued:
// the lanes are queued step by step in turn to put that off.)
#include <algorithm>
#include <unordered_map>
#include <utility>

#include "runtime_state.h"

using coll::emu::NodeKind;
using coll::emu::rt::fail;
using coll::emu::rt::ok;
using coll::emu::rt::resolve;
using StepKind = CaptureStep::Kind;

struct CUgraphExec_st {
  std::vector<CUgraphNode_st> nodes;
  CaptureLanes order;
  std::vector<std::unique_ptr<CUstream_st>> laneStreams;  // lanes 1.. run here
};

namespace coll::emu::rt {
namespace {

// The captures in progress (under captureMutex()).
struct Captures {
  unsigned long long lastId = 0;
  std::unordered_map<unsigned long long, CaptureState*> open;  // by id
};
Captures& captures() {
  static Captures* c = new Captures;  // never destroyed: streams may outlive static destructors
  return *c;
}

// Whether the lane's steps from `from` on are followed by a join into the
// origin: a signal at or after `from` that a lane waits for at a point
// itself so joined.  `depth` bounds the walk (signals precede their waits,
// so there is no cycle to follow; this only keeps a bad graph finite).
bool joinedFrom(const CaptureLanes& o, size_t lane, size_t from, size_t depth) {
  if (lane == 0) return true;
  if (depth > o.lanes.size()) return false;
  const auto& steps = o.lanes[lane];
  for (size_t i = from; i < steps.size(); ++i) {
    if (steps[i].kind != StepKind::Signal) continue;
    for (size_t l = 0; l < o.lanes.size(); ++l)
      for (size_t j = 0; j < o.lanes[l].size(); ++j)
        if (o.lanes[l][j].kind == StepKind::Wait && o.lanes[l][j].index == steps[i].index &&
            joinedFrom(o, l, j + 1, depth + 1))
          return true;
  }
  return false;
}

// Every lane but the origin's has its work (all of it, and its fork at
// least) joined back into the origin.
bool everyLaneJoined(const CaptureLanes& o) {
  for (size_t l = 1; l < o.lanes.size(); ++l) {
    const auto& steps = o.lanes[l];
    size_t afterWork = 0;
    for (size_t i = 0; i < steps.size(); ++i)
      if (steps[i].kind == StepKind::Node) afterWork = i + 1;
    if (!joinedFrom(o, l, afterWork, 0)) return false;
  }
  return true;
}

// Ends capture c: its streams stop capturing; the graph goes to the caller.
CUgraph_st* endCapture(CaptureState* c) {
  for (CUstream_st* m : c->members) m->capture.store(nullptr);
  captures().open.erase(c->id);
  CUgraph_st* g = c->graph;
  delete c;
  return g;
}

// One launch's signals: each is set once, by its lane, and waited for by
// the lanes that joined it.
struct LaunchSignals {
  explicit LaunchSignals(size_t n) : set(n, false) {}
  std::mutex m;
  std::condition_variable cv;
  std::vector<bool> set;
};

}  // namespace

std::mutex& captureMutex() {
  static std::mutex* m = new std::mutex;  // never destroyed, as captures()
  return *m;
}

namespace {
// A node at the end of s's lane.
void appendNode(CUstream_st* s, CUgraphNode_st node) {
  CUgraph_st* g = s->capture.load()->graph;
  g->nodes.push_back(std::move(node));
  g->order.lanes[s->lane].push_back(CaptureStep{StepKind::Node, g->nodes.size() - 1});
}
}  // namespace

void captureAppend(CUstream_st* s, NodeKind kind, std::function<void()> work) {
  appendNode(s, CUgraphNode_st{kind, std::move(work)});
}

void captureEventNode(CUstream_st* s, NodeKind kind, CUevent_st* e) { appendNode(s, CUgraphNode_st{kind, {}, e}); }

cudaError_t captureRecord(CUevent_st* e, CUstream_st* s) {
  CaptureState* c = s->capture.load();
  const size_t signal = c->graph->order.signals++;
  c->graph->order.lanes[s->lane].push_back(CaptureStep{StepKind::Signal, signal});
  std::lock_guard<std::mutex> lock(e->m);
  e->captureId = c->id;
  e->signal = signal;
  return ok();
}

cudaError_t captureWait(CUstream_st* s, CUevent_st* e) {
  unsigned long long id;
  size_t signal;
  {
    std::lock_guard<std::mutex> lock(e->m);
    id = e->captureId;
    signal = e->signal;
  }
  auto it = captures().open.find(id);
  // An event of no capture (or of one that ended) on a capturing stream.
  if (id == 0 || it == captures().open.end()) return fail(cudaErrorStreamCaptureIsolation);
  CaptureState* c = it->second;
  CaptureState* mine = s->capture.load();
  if (mine != nullptr && mine != c) return fail(cudaErrorStreamCaptureMerge);
  if (mine == nullptr) {  // the fork: s joins the capture with a lane of its own
    s->lane = c->graph->order.lanes.size();
    c->graph->order.lanes.emplace_back();
    c->members.push_back(s);
    s->capture.store(c);
  }
  c->graph->order.lanes[s->lane].push_back(CaptureStep{StepKind::Wait, signal});
  return ok();
}

void captureStreamGone(CUstream_st* s) {
  std::lock_guard<std::mutex> lock(captureMutex());
  CaptureState* c = s->capture.load();
  if (c == nullptr) return;
  if (c->members.front() == s) {  // the origin: the capture ends with it
    delete endCapture(c);
    return;
  }
  c->members.erase(std::find(c->members.begin(), c->members.end(), s));
  s->capture.store(nullptr);
}

}  // namespace coll::emu::rt

using coll::emu::rt::captureMutex;
using coll::emu::rt::captures;

cudaError_t cudaStreamBeginCapture(cudaStream_t handle, cudaStreamCaptureMode) {
  if (handle == nullptr || handle == cudaStreamLegacy || handle == cudaStreamPerThread)
    return fail(cudaErrorStreamCaptureUnsupported);  // (the legacy stream, here)
  CUstream_st* s = resolve(handle);
  std::lock_guard<std::mutex> lock(captureMutex());
  if (s->capture.load() != nullptr) return fail(cudaErrorIllegalState);
  auto* c = new CaptureState{new CUgraph_st, ++captures().lastId, {s}};
  captures().open.emplace(c->id, c);
  s->lane = 0;
  s->capture.store(c);
  return ok();
}

// The emulation forbids no call during a capture, so a thread's mode is only
// kept and swapped.
cudaError_t cudaThreadExchangeStreamCaptureMode(cudaStreamCaptureMode* mode) {
  if (mode == nullptr) return fail(cudaErrorInvalidValue);
  thread_local cudaStreamCaptureMode current = cudaStreamCaptureModeGlobal;
  std::swap(current, *mode);
  return ok();
}

cudaError_t cudaStreamEndCapture(cudaStream_t handle, cudaGraph_t* out) {
  CUstream_st* s = resolve(handle);
  if (out == nullptr) return fail(cudaErrorInvalidValue);
  std::lock_guard<std::mutex> lock(captureMutex());
  CaptureState* c = s->capture.load();
  if (c == nullptr) return fail(cudaErrorIllegalState);
  if (c->members.front() != s) return fail(cudaErrorStreamCaptureUnmatched);
  const bool joined = coll::emu::rt::everyLaneJoined(c->graph->order);
  CUgraph_st* g = coll::emu::rt::endCapture(c);
  if (!joined) {  // CUDA ends the capture and returns no graph
    delete g;
    *out = nullptr;
    return fail(cudaErrorStreamCaptureUnjoined);
  }
  *out = g;
  return ok();
}

cudaError_t cudaStreamIsCapturing(cudaStream_t handle, cudaStreamCaptureStatus* status) {
  if (status == nullptr) return fail(cudaErrorInvalidValue);
  *status = resolve(handle)->capture.load() != nullptr ? cudaStreamCaptureStatusActive : cudaStreamCaptureStatusNone;
  return ok();
}

// The status, the capture's id and its graph; no dependency nodes (the
// emulation's graphs keep lanes, not edges).
cudaError_t cudaStreamGetCaptureInfo(cudaStream_t handle, cudaStreamCaptureStatus* status, unsigned long long* id,
                                     cudaGraph_t* graph, const cudaGraphNode_t** dependencies,
                                     const cudaGraphEdgeData** edgeData, size_t* numDependencies) {
  if (status == nullptr) return fail(cudaErrorInvalidValue);
  std::lock_guard<std::mutex> lock(captureMutex());
  const CaptureState* c = resolve(handle)->capture.load();
  *status = c != nullptr ? cudaStreamCaptureStatusActive : cudaStreamCaptureStatusNone;
  if (id != nullptr && c != nullptr) *id = c->id;
  if (graph != nullptr && c != nullptr) *graph = c->graph;
  if (dependencies != nullptr) *dependencies = nullptr;
  if (edgeData != nullptr) *edgeData = nullptr;
  if (numDependencies != nullptr) *numDependencies = 0;
  return ok();
}

cudaError_t cudaGraphInstantiate(cudaGraphExec_t* out, cudaGraph_t g, unsigned long long) {
  if (out == nullptr || g == nullptr) return fail(cudaErrorInvalidValue);
  auto* x = new CUgraphExec_st{std::vector<CUgraphNode_st>(g->nodes.begin(), g->nodes.end()), g->order, {}};
  for (size_t l = 1; l < x->order.lanes.size(); ++l)
    x->laneStreams.push_back(std::make_unique<CUstream_st>(cudaStreamNonBlocking));
  *out = x;
  return ok();
}

cudaError_t cudaGraphLaunch(cudaGraphExec_t x, cudaStream_t s) {
  if (x == nullptr) return fail(cudaErrorInvalidResourceHandle);
  if (resolve(s)->capture.load() != nullptr) return fail(cudaErrorStreamCaptureUnsupported);  // (not emulated)
  auto signals = std::make_shared<coll::emu::rt::LaunchSignals>(x->order.signals);
  const auto& lanes = x->order.lanes;
  size_t longest = 0;
  for (const auto& l : lanes) longest = std::max(longest, l.size());
  for (size_t i = 0; i < longest; ++i) {
    for (size_t l = 0; l < lanes.size(); ++l) {
      if (i >= lanes[l].size()) continue;
      const CaptureStep step = lanes[l][i];
      cudaStream_t target = l == 0 ? s : x->laneStreams[l - 1].get();
      cudaError_t e = cudaSuccess;
      const CUgraphNode_st* node = step.kind == StepKind::Node ? &x->nodes[step.index] : nullptr;
      if (node != nullptr && node->event != nullptr) {  // an event node: a record / wait as of this launch
        e = node->kind == NodeKind::Event ? coll::emu::rt::recordLive(node->event, target)
                                          : coll::emu::rt::waitLive(target, node->event);
      } else if (node != nullptr) {
        e = coll::emu::enqueue(target, node->kind, node->work);
      } else if (step.kind == StepKind::Signal) {
        e = coll::emu::enqueue(target, NodeKind::Event, [signals, k = step.index] {
          std::lock_guard<std::mutex> lock(signals->m);
          signals->set[k] = true;
          signals->cv.notify_all();
        });
      } else {
        e = coll::emu::enqueue(target, NodeKind::Event, [signals, k = step.index] {
          std::unique_lock<std::mutex> lock(signals->m);
          signals->cv.wait(lock, [&] { return signals->set[k]; });
        });
      }
      if (e != cudaSuccess) return fail(e);
    }
  }
  return ok();
}

cudaError_t cudaGraphGetNodes(cudaGraph_t g, cudaGraphNode_t* nodes, size_t* count) {
  if (g == nullptr || count == nullptr) return fail(cudaErrorInvalidValue);
  if (nodes != nullptr) {
    size_t i = 0;
    for (; i < *count && i < g->nodes.size(); ++i) nodes[i] = &g->nodes[i];
    for (size_t j = i; j < *count; ++j) nodes[j] = nullptr;
    *count = i;
  } else {
    *count = g->nodes.size();
  }
  return ok();
}

cudaError_t cudaGraphNodeGetType(cudaGraphNode_t n, cudaGraphNodeType* type) {
  if (n == nullptr || type == nullptr) return fail(cudaErrorInvalidValue);
  switch (n->kind) {
    case NodeKind::Kernel: *type = cudaGraphNodeTypeKernel; break;
    case NodeKind::Memcpy: *type = cudaGraphNodeTypeMemcpy; break;
    case NodeKind::Memset: *type = cudaGraphNodeTypeMemset; break;
    case NodeKind::Host: *type = cudaGraphNodeTypeHost; break;
    case NodeKind::Event: *type = cudaGraphNodeTypeEventRecord; break;
    case NodeKind::EventWait: *type = cudaGraphNodeTypeWaitEvent; break;
  }
  return ok();
}

cudaError_t cudaGraphDestroy(cudaGraph_t g) {
  delete g;
  return ok();
}

// Waits for the graph's lanes to drain, as ~CUstream_st does.
cudaError_t cudaGraphExecDestroy(cudaGraphExec_t x) {
  delete x;
  return ok();
}
