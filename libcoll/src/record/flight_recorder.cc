#include "record/flight_recorder.h"

#include <fcntl.h>
#include <time.h>
#include <unistd.h>

#include <cstdio>

#if defined(__x86_64__)
#include <x86intrin.h>
#endif

namespace coll::record {
namespace {

// Words of an entry.
enum Word { kSeq = 0, kCollSeq, kP2pSeq, kCount, kPacked, kRootWait, kTEnq, kTStart, kTEnd, kStep };

uint64_t ticks() {
#if defined(__x86_64__)
  return __rdtsc();
#else
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1'000'000'000ull + static_cast<uint64_t>(ts.tv_nsec);
#endif
}

int64_t realtimeNs() {
  timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return ts.tv_sec * 1'000'000'000LL + ts.tv_nsec;
}

uint64_t pack(const CallInfo& c, CallState s) {
  return uint64_t{c.kind} | uint64_t{c.dtype} << 8 | uint64_t{c.redop} << 16 | uint64_t{c.device} << 24 |
         uint64_t{c.algo} << 32 | uint64_t{c.channels} << 40 | uint64_t{static_cast<uint8_t>(s)} << 48;
}

uint8_t byteOf(uint64_t w, int i) { return static_cast<uint8_t>(w >> (8 * i)); }

void appendJsonString(std::string& out, const std::string& s) {
  out += '"';
  for (unsigned char ch : s) {
    if (ch == '"') out += "\\\"";
    else if (ch == '\\') out += "\\\\";
    else if (ch == '\n') out += "\\n";
    else if (ch < 0x20) out += fmt::format("\\u{:04x}", ch);
    else out += static_cast<char>(ch);
  }
  out += '"';
}

const char* stateName(uint8_t s) {
  switch (static_cast<CallState>(s)) {
    case CallState::Enqueued: return "enqueued";
    case CallState::Started: return "started";
    case CallState::Completed: return "completed";
    case CallState::Failed: return "failed";
  }
  return "unknown";
}

const char* orEmpty(const char* (*f)(uint8_t), uint8_t v) {
  const char* s = f ? f(v) : nullptr;
  return s ? s : "";
}

}  // namespace

FlightRecorder::FlightRecorder(size_t entries) : ring_(entries), tsc0_(ticks()), realtime0_(realtimeNs()) {}

template <typename F>
void FlightRecorder::modify(uint64_t h, F&& f) {
  Entry* e = slot(h);
  if (e->w[kSeq].load(std::memory_order_relaxed) != h) return;  // overwritten by a newer call
  const uint64_t v = e->version.load(std::memory_order_relaxed);
  e->version.store(v + 1, std::memory_order_relaxed);
  std::atomic_thread_fence(std::memory_order_release);
  f(*e);
  e->version.store(v + 2, std::memory_order_release);
}

uint64_t FlightRecorder::begin(const CallInfo& c, CallState s) {
  if (!on()) return 0;
  // fetch_add: the host-staged device path's proxy thread records its
  // pieces beside the caller's thread.
  const uint64_t h = recorded_.fetch_add(1, std::memory_order_acq_rel);
  Entry* e = slot(h);
  const uint64_t v = e->version.load(std::memory_order_relaxed);
  e->version.store(v + 1, std::memory_order_relaxed);
  std::atomic_thread_fence(std::memory_order_release);
  const uint64_t now = ticks();
  e->w[kSeq].store(h, std::memory_order_relaxed);
  e->w[kCollSeq].store(static_cast<uint64_t>(c.collSeq), std::memory_order_relaxed);
  e->w[kP2pSeq].store(static_cast<uint64_t>(c.p2pSeq), std::memory_order_relaxed);
  e->w[kCount].store(c.count, std::memory_order_relaxed);
  e->w[kPacked].store(pack(c, s), std::memory_order_relaxed);
  e->w[kRootWait].store(static_cast<uint32_t>(c.root) | (uint64_t{0xffffffffu} << 32), std::memory_order_relaxed);
  e->w[kTEnq].store(now, std::memory_order_relaxed);
  e->w[kTStart].store(s == CallState::Started ? now : 0, std::memory_order_relaxed);
  e->w[kTEnd].store(0, std::memory_order_relaxed);
  e->w[kStep].store(0, std::memory_order_relaxed);
  e->version.store(v + 2, std::memory_order_release);
  return h;
}

void FlightRecorder::start(uint64_t h) {
  if (!on()) return;
  modify(h, [&](Entry& e) {
    const uint64_t p = e.w[kPacked].load(std::memory_order_relaxed);
    e.w[kPacked].store((p & ~(uint64_t{0xff} << 48)) | uint64_t{static_cast<uint8_t>(CallState::Started)} << 48,
                       std::memory_order_relaxed);
    e.w[kTStart].store(ticks(), std::memory_order_relaxed);
  });
}

void FlightRecorder::end(uint64_t h, bool ok) {
  if (!on()) return;
  modify(h, [&](Entry& e) {
    const CallState s = ok ? CallState::Completed : CallState::Failed;
    const uint64_t p = e.w[kPacked].load(std::memory_order_relaxed);
    e.w[kPacked].store((p & ~(uint64_t{0xff} << 48)) | uint64_t{static_cast<uint8_t>(s)} << 48,
                       std::memory_order_relaxed);
    const uint64_t now = ticks();
    if (e.w[kTStart].load(std::memory_order_relaxed) == 0) e.w[kTStart].store(now, std::memory_order_relaxed);
    e.w[kTEnd].store(now, std::memory_order_relaxed);
    if (ok) {
      // Done: it waits on nobody.
      const uint64_t rw = e.w[kRootWait].load(std::memory_order_relaxed);
      e.w[kRootWait].store((rw & 0xffffffffu) | (uint64_t{0xffffffffu} << 32), std::memory_order_relaxed);
    }
  });
}

void FlightRecorder::setAlgo(uint64_t h, uint8_t algo, uint8_t channels) {
  if (!on()) return;
  modify(h, [&](Entry& e) {
    uint64_t p = e.w[kPacked].load(std::memory_order_relaxed);
    p = (p & ~(uint64_t{0xffff} << 32)) | uint64_t{algo} << 32 | uint64_t{channels} << 40;
    e.w[kPacked].store(p, std::memory_order_relaxed);
  });
}

void FlightRecorder::setWait(uint64_t h, int peer, uint32_t step, uint32_t nsteps, const std::string& what) {
  if (!on()) return;
  modify(h, [&](Entry& e) {
    const uint64_t rw = e.w[kRootWait].load(std::memory_order_relaxed);
    e.w[kRootWait].store((rw & 0xffffffffu) | uint64_t{static_cast<uint32_t>(peer)} << 32, std::memory_order_relaxed);
    e.w[kStep].store(uint64_t{step} | uint64_t{nsteps} << 32, std::memory_order_relaxed);
  });
  std::lock_guard<std::mutex> lock(textMu_);
  text_[h].first = what;
  // Text of calls long gone from the ring is dropped.
  while (!text_.empty() && text_.begin()->first + ring_.size() <= h) text_.erase(text_.begin());
}

void FlightRecorder::setError(uint64_t h, const std::string& error) {
  if (!on()) return;
  std::lock_guard<std::mutex> lock(textMu_);
  text_[h].second = error;
  while (!text_.empty() && text_.begin()->first + ring_.size() <= h) text_.erase(text_.begin());
}

std::string FlightRecorder::render(const DumpHeader& hd, const Names& names) const {
  const uint64_t recorded = recorded_.load(std::memory_order_acquire);
  const uint64_t tsc1 = ticks();
  const int64_t rt1 = realtimeNs();
  // Ticks to CLOCK_REALTIME: the line through (creation, now).
  const double nsPerTick = tsc1 > tsc0_ ? static_cast<double>(rt1 - realtime0_) / static_cast<double>(tsc1 - tsc0_) : 1;
  auto toRealtime = [&](uint64_t t) -> int64_t {
    if (t == 0) return 0;
    return realtime0_ + static_cast<int64_t>(static_cast<double>(static_cast<int64_t>(t - tsc0_)) * nsPerTick);
  };
  char host[256] = {};
  gethostname(host, sizeof(host) - 1);
  std::string out = "{\"type\":\"header\",\"version\":1,\"comm\":";
  appendJsonString(out, hd.comm);
  out += fmt::format(",\"rank\":{},\"nranks\":{},\"host\":", hd.rank, hd.nranks);
  appendJsonString(out, host);
  out += fmt::format(",\"pid\":{},\"reason\":", static_cast<int>(getpid()));
  appendJsonString(out, hd.reason);
  out += ",\"message\":";
  appendJsonString(out, hd.message);
  out += fmt::format(",\"time_ns\":{},\"entries\":{},\"recorded\":{}}}\n", rt1, ring_.size(), recorded);
  std::map<uint64_t, std::pair<std::string, std::string>> text;
  {
    std::lock_guard<std::mutex> lock(textMu_);
    text = text_;
  }
  const uint64_t first = recorded > ring_.size() ? recorded - ring_.size() : 0;
  for (uint64_t h = first; h < recorded; ++h) {
    const Entry& e = ring_[h % ring_.size()];
    uint64_t w[kWords];
    bool clean = false;
    for (int attempt = 0; attempt < 100 && !clean; ++attempt) {
      const uint64_t v0 = e.version.load(std::memory_order_acquire);
      if (v0 & 1) continue;
      for (int i = 0; i < kWords; ++i) w[i] = e.w[i].load(std::memory_order_relaxed);
      std::atomic_thread_fence(std::memory_order_acquire);
      clean = e.version.load(std::memory_order_relaxed) == v0;
    }
    if (!clean || w[kSeq] != h) continue;  // being rewritten: skipped, not printed half
    const uint64_t p = w[kPacked];
    const bool reduces = byteOf(p, 2) != kNone;
    const uint8_t algo = byteOf(p, 4);
    out += fmt::format("{{\"type\":\"call\",\"seq\":{},\"coll_seq\":{},\"p2p_seq\":{},\"op\":\"{}\",\"count\":{},"
                       "\"dtype\":\"{}\",\"redop\":\"{}\",\"root\":{},\"buffer\":\"{}\",\"algo\":\"{}\","
                       "\"channels\":{},\"state\":\"{}\",\"t_enqueue_ns\":{},\"t_start_ns\":{},\"t_end_ns\":{},"
                       "\"wait_peer\":{},\"wait_step\":{},\"nsteps\":{},\"wait_what\":",
                       h, static_cast<int64_t>(w[kCollSeq]), static_cast<int64_t>(w[kP2pSeq]),
                       orEmpty(names.kind, byteOf(p, 0)), w[kCount], orEmpty(names.dtype, byteOf(p, 1)),
                       reduces ? orEmpty(names.redop, byteOf(p, 2)) : "",
                       static_cast<int32_t>(w[kRootWait] & 0xffffffffu), byteOf(p, 3) ? "device" : "host",
                       algo == kBoard ? "board" : algo == kNone ? "" : orEmpty(names.algo, algo), byteOf(p, 5),
                       stateName(byteOf(p, 6)), toRealtime(w[kTEnq]), toRealtime(w[kTStart]), toRealtime(w[kTEnd]),
                       static_cast<int32_t>(w[kRootWait] >> 32), static_cast<uint32_t>(w[kStep]),
                       static_cast<uint32_t>(w[kStep] >> 32));
    auto t = text.find(h);
    // A completed call waits on nobody (its last wait's text stays in the
    // map: end() takes no lock).
    const bool done = static_cast<CallState>(byteOf(p, 6)) == CallState::Completed;
    appendJsonString(out, t != text.end() && !done ? t->second.first : std::string());
    out += ",\"error\":";
    appendJsonString(out, t != text.end() ? t->second.second : std::string());
    out += "}\n";
  }
  return out;
}

Status FlightRecorder::dump(const std::string& path, const DumpHeader& h, const Names& names) const {
  const std::string text = render(h, names);
  const std::string tmp = path + ".tmp";
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return makeError(collSystemError, "flight recorder: cannot write {}: {}", tmp, strerror(errno));
  size_t done = 0;
  while (done < text.size()) {
    const ssize_t n = ::write(fd, text.data() + done, text.size() - done);
    if (n <= 0) {
      const int err = errno;
      ::close(fd);
      ::unlink(tmp.c_str());
      return makeError(collSystemError, "flight recorder: writing {} failed: {}", tmp, strerror(err));
    }
    done += static_cast<size_t>(n);
  }
  ::close(fd);
  if (::rename(tmp.c_str(), path.c_str()) != 0)
    return makeError(collSystemError, "flight recorder: cannot rename {} to {}: {}", tmp, path, strerror(errno));
  return Status::ok();
}

}  // namespace coll::record
