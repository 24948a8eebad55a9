// runtime_streams.cc — the emulated runtime's streams, events, host
// functions and graphs.  A stream is a worker thread running its work in
// order; the legacy default stream (stream 0) is ordered with every
// blocking stream as CUDA orders it: its work waits for theirs queued
// earlier, theirs for its.  An enqueue on a full stream waits for room.
// While a stream captures, its work is appended to the graph instead
// (runtime_graphs.cc).
#include <algorithm>
#include <chrono>
#include <utility>

#include "runtime_state.h"

CUstream_st::CUstream_st(unsigned f) : flags(f), worker_([this] { run(); }) {}

CUstream_st::~CUstream_st() {
  {
    std::lock_guard<std::mutex> lock(m_);
    stop_ = true;
  }
  cv_.notify_all();
  worker_.join();
}

// A full stream blocks the enqueuing thread until its work drains, as
// CUDA's does (coll::emu::rt::streamDepth); work larger than the whole queue
// waits for an empty one, and the stream's own worker never waits for
// itself.
void CUstream_st::push(std::function<void()> work, int cost) {
  {
    std::unique_lock<std::mutex> lock(m_);
    if (std::this_thread::get_id() != worker_.get_id()) {
      const int64_t depth = coll::emu::rt::streamDepth();
      cv_.wait(lock, [&] { return load_ == 0 || load_ + cost <= depth; });
    }
    queue_.push_back(Work{std::move(work), cost});
    ++ops_;
    load_ += cost;
  }
  cv_.notify_all();
}

uint64_t CUstream_st::ticket() {
  std::lock_guard<std::mutex> lock(m_);
  return ops_;
}

bool CUstream_st::idle() {
  std::lock_guard<std::mutex> lock(m_);
  return done_ == ops_;
}

void CUstream_st::waitFor(uint64_t t) {
  std::unique_lock<std::mutex> lock(m_);
  cv_.wait(lock, [&] { return done_ >= t; });
}

void CUstream_st::run() {
  std::unique_lock<std::mutex> lock(m_);
  for (;;) {
    cv_.wait(lock, [&] { return stop_ || !queue_.empty(); });
    if (queue_.empty()) return;  // stopping, and everything queued has run
    Work work = std::move(queue_.front());
    queue_.pop_front();
    lock.unlock();
    work.run();
    lock.lock();
    ++done_;
    load_ -= work.cost;
    cv_.notify_all();
  }
}

namespace coll::emu::rt {
namespace {

// Every live stream but the legacy one.  Shared: a stream destroyed while
// cudaDeviceSynchronize waits for it lives until that wait ends.
struct Streams {
  std::mutex m;
  std::vector<std::shared_ptr<CUstream_st>> all;
};
Streams& streams() {
  static Streams* s = new Streams;  // never destroyed: streams may outlive static destructors
  return *s;
}
CUstream_st* legacy() {
  static CUstream_st* s = [] {
    auto* l = new CUstream_st(0);  // never destroyed, like CUDA's
    if (workQueues() > 0) l->queue = 0;
    return l;
  }();
  return s;
}
// The legacy stream as an entry of a wait list (not owned).
std::shared_ptr<CUstream_st> legacyEntry() {
  return std::shared_ptr<CUstream_st>(std::shared_ptr<CUstream_st>{}, legacy());
}
}  // namespace

CUstream_st* resolve(cudaStream_t s) {
  if (s == nullptr || s == cudaStreamLegacy || s == cudaStreamPerThread) return legacy();
  return s;
}

double nowMs() {
  static const auto t0 = std::chrono::steady_clock::now();
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

void synchronizeAll() {
  std::vector<std::pair<std::shared_ptr<CUstream_st>, uint64_t>> targets;
  {
    std::lock_guard<std::mutex> lock(streams().m);
    for (const auto& s : streams().all) targets.emplace_back(s, s->ticket());
  }
  const uint64_t legacyTicket = legacy()->ticket();
  for (auto& [s, t] : targets) s->waitFor(t);
  legacy()->waitFor(legacyTicket);
}

}  // namespace coll::emu::rt

namespace coll::emu {

cudaError_t enqueue(cudaStream_t handle, NodeKind kind, std::function<void()> work) {
  CUstream_st* s = rt::resolve(handle);
  if (s->capture.load() != nullptr) {
    std::lock_guard<std::mutex> lock(rt::captureMutex());
    if (s->capture.load() != nullptr) {  // (not ended by another thread meanwhile)
      rt::captureAppend(s, kind, std::move(work));
      return cudaSuccess;
    }
  }
  // The legacy stream's ordering with the blocking streams, and the order
  // of a shared hardware queue (rt::workQueues).
  std::vector<std::pair<std::shared_ptr<CUstream_st>, uint64_t>> after;
  {
    std::lock_guard<std::mutex> lock(rt::streams().m);
    if (s->queue >= 0) {
      for (const auto& o : rt::streams().all)
        if (o.get() != s && o->queue == s->queue) after.emplace_back(o, o->ticket());
      if (s != rt::legacy() && rt::legacy()->queue == s->queue)
        after.emplace_back(rt::legacyEntry(), rt::legacy()->ticket());
    }
    if (s == rt::legacy()) {
      for (const auto& o : rt::streams().all)
        if ((o->flags & cudaStreamNonBlocking) == 0) after.emplace_back(o, o->ticket());
    } else if ((s->flags & cudaStreamNonBlocking) == 0) {
      after.emplace_back(rt::legacyEntry(), rt::legacy()->ticket());
    }
  }
  const int cost = rt::streamSlots(kind);
  if (after.empty()) {
    s->push(std::move(work), cost);
  } else {
    s->push(
        [after = std::move(after), work = std::move(work)] {
          for (auto& [o, t] : after) o->waitFor(t);
          work();
        },
        cost);
  }
  return cudaSuccess;
}

uint64_t streamOpsQueued(cudaStream_t stream) { return rt::resolve(stream)->ticket(); }

}  // namespace coll::emu

using coll::emu::NodeKind;
using coll::emu::rt::fail;
using coll::emu::rt::ok;
using coll::emu::rt::resolve;

cudaError_t cudaStreamCreateWithFlags(cudaStream_t* out, unsigned flags) {
  if (out == nullptr || (flags & ~cudaStreamNonBlocking) != 0) return fail(cudaErrorInvalidValue);
  auto s = std::make_shared<CUstream_st>(flags);
  if (const int queues = coll::emu::rt::workQueues(); queues > 0) {
    static std::atomic<int> made{1};  // the legacy stream has queue 0
    s->queue = made.fetch_add(1) % queues;
  }
  std::lock_guard<std::mutex> lock(coll::emu::rt::streams().m);
  coll::emu::rt::streams().all.push_back(s);
  *out = s.get();
  return ok();
}

cudaError_t cudaStreamCreate(cudaStream_t* out) { return cudaStreamCreateWithFlags(out, cudaStreamDefault); }

// Returns at once, as CUDA does; the stream's queued work still runs, and a
// thread then frees the stream.
cudaError_t cudaStreamDestroy(cudaStream_t handle) {
  CUstream_st* raw = resolve(handle);
  if (raw == coll::emu::rt::legacy()) return fail(cudaErrorInvalidResourceHandle);
  std::shared_ptr<CUstream_st> s;
  {
    std::lock_guard<std::mutex> lock(coll::emu::rt::streams().m);
    auto& all = coll::emu::rt::streams().all;
    auto it = std::find_if(all.begin(), all.end(), [&](const auto& p) { return p.get() == raw; });
    if (it == all.end()) return fail(cudaErrorInvalidResourceHandle);
    s = std::move(*it);
    all.erase(it);
  }
  coll::emu::rt::captureStreamGone(s.get());
  std::thread([s = std::move(s)]() mutable { s.reset(); }).detach();  // ~CUstream_st drains and joins
  return ok();
}

cudaError_t cudaStreamSynchronize(cudaStream_t handle) {
  CUstream_st* s = resolve(handle);
  if (s->capture.load() != nullptr) return fail(cudaErrorStreamCaptureUnsupported);
  s->waitFor(s->ticket());
  return ok();
}

cudaError_t cudaStreamQuery(cudaStream_t handle) {
  CUstream_st* s = resolve(handle);
  if (s->capture.load() != nullptr) return fail(cudaErrorStreamCaptureUnsupported);
  return s->idle() ? cudaSuccess : cudaErrorNotReady;  // not ready is no error: no fail()
}

cudaError_t cudaDeviceSynchronize() {
  coll::emu::rt::synchronizeAll();
  return ok();
}

// CUDA runs the host functions of independent streams "in undefined order"
// and "may serialize" them (one driver thread).  Here they run one at a
// time per process, so a host function that waits for another stream's (or
// another process's) host function hangs here as it can on a GPU.
static std::mutex& hostFunctionTurn() {
  static std::mutex* m = new std::mutex;  // never destroyed: streams may outlive static destructors
  return *m;
}

cudaError_t cudaLaunchHostFunc(cudaStream_t s, cudaHostFn_t fn, void* userData) {
  if (fn == nullptr) return fail(cudaErrorInvalidValue);
  return coll::emu::enqueue(s, NodeKind::Host, [fn, userData] {
    std::lock_guard<std::mutex> turn(hostFunctionTurn());
    fn(userData);
  });
}

// ---- events ----

cudaError_t cudaEventCreateWithFlags(cudaEvent_t* out, unsigned) {
  if (out == nullptr) return fail(cudaErrorInvalidValue);
  *out = new CUevent_st;
  return ok();
}

cudaError_t cudaEventCreate(cudaEvent_t* out) { return cudaEventCreateWithFlags(out, cudaEventDefault); }

cudaError_t cudaEventDestroy(cudaEvent_t e) {
  if (e == nullptr) return fail(cudaErrorInvalidResourceHandle);
  // A record still queued holds the event: wait for it.
  {
    std::unique_lock<std::mutex> lock(e->m);
    e->cv.wait(lock, [&] { return e->completed >= e->recorded; });
  }
  delete e;
  return ok();
}

namespace coll::emu::rt {

cudaError_t recordLive(CUevent_st* e, cudaStream_t s) {
  uint64_t gen;
  {
    std::lock_guard<std::mutex> lock(e->m);
    gen = ++e->recorded;
    e->captureId = 0;
  }
  return coll::emu::enqueue(s, NodeKind::Event, [e, gen] {
    std::lock_guard<std::mutex> lock(e->m);
    e->completed = std::max(e->completed, gen);
    e->ms = coll::emu::rt::nowMs();
    e->cv.notify_all();
  });
}

cudaError_t waitLive(cudaStream_t s, CUevent_st* e) {
  uint64_t target;
  {
    std::lock_guard<std::mutex> lock(e->m);
    target = e->recorded;
  }
  return coll::emu::enqueue(s, NodeKind::EventWait, [e, target] {
    std::unique_lock<std::mutex> lock(e->m);
    e->cv.wait(lock, [&] { return e->completed >= target; });
  });
}

}  // namespace coll::emu::rt

cudaError_t cudaEventRecordWithFlags(cudaEvent_t e, cudaStream_t s, unsigned flags) {
  if (e == nullptr) return fail(cudaErrorInvalidResourceHandle);
  if ((flags & ~cudaEventRecordExternal) != 0) return fail(cudaErrorInvalidValue);
  if (resolve(s)->capture.load() != nullptr) {
    std::lock_guard<std::mutex> lock(coll::emu::rt::captureMutex());
    if (resolve(s)->capture.load() != nullptr) {
      if ((flags & cudaEventRecordExternal) == 0) return coll::emu::rt::captureRecord(e, resolve(s));
      coll::emu::rt::captureEventNode(resolve(s), NodeKind::Event, e);
      return ok();
    }
  }
  return coll::emu::rt::recordLive(e, s);
}

cudaError_t cudaEventRecord(cudaEvent_t e, cudaStream_t s) { return cudaEventRecordWithFlags(e, s, 0); }

cudaError_t cudaEventSynchronize(cudaEvent_t e) {
  if (e == nullptr) return fail(cudaErrorInvalidResourceHandle);
  std::unique_lock<std::mutex> lock(e->m);
  const uint64_t target = e->recorded;
  e->cv.wait(lock, [&] { return e->completed >= target; });
  return ok();
}

cudaError_t cudaEventQuery(cudaEvent_t e) {
  if (e == nullptr) return fail(cudaErrorInvalidResourceHandle);
  std::lock_guard<std::mutex> lock(e->m);
  return e->completed >= e->recorded ? cudaSuccess : cudaErrorNotReady;
}

cudaError_t cudaEventElapsedTime(float* ms, cudaEvent_t a, cudaEvent_t b) {
  if (ms == nullptr || a == nullptr || b == nullptr) return fail(cudaErrorInvalidValue);
  std::scoped_lock lock(a->m, b->m);
  if (a->recorded == 0 || b->recorded == 0) return fail(cudaErrorInvalidResourceHandle);
  if (a->completed < a->recorded || b->completed < b->recorded) return cudaErrorNotReady;
  *ms = static_cast<float>(b->ms - a->ms);
  return ok();
}

cudaError_t cudaStreamWaitEvent(cudaStream_t s, cudaEvent_t e, unsigned flags) {
  if (e == nullptr) return fail(cudaErrorInvalidResourceHandle);
  if ((flags & ~cudaEventWaitExternal) != 0) return fail(cudaErrorInvalidValue);
  bool captured;
  {
    std::lock_guard<std::mutex> lock(e->m);
    captured = e->captureId != 0;
  }
  if (captured || resolve(s)->capture.load() != nullptr) {
    std::lock_guard<std::mutex> lock(coll::emu::rt::captureMutex());
    if ((flags & cudaEventWaitExternal) != 0 && resolve(s)->capture.load() != nullptr) {
      coll::emu::rt::captureEventNode(resolve(s), NodeKind::EventWait, e);
      return ok();
    }
    return coll::emu::rt::captureWait(resolve(s), e);
  }
  return coll::emu::rt::waitLive(s, e);
}
