// flight_recorder.h — a communicator's last calls, kept in a ring so that a
// hang or a failure can be explained after the fact (docs/flight-recorder.md
// has the dump's format).
//
// The caller's thread writes an entry at each call's start and end; the
// dump may run on another thread (SIGUSR2's).  Entries are a handful of
// 64-bit words stored with relaxed atomics under a per-entry sequence
// counter (a seqlock): a plain store each on x86, no lock on the hot path,
// and a reader that sees a half-written entry skips it rather than print
// a mix.  Times are the TSC where there is one (a few ns to read), mapped
// to CLOCK_REALTIME when dumped; text (what a call waits for, its error)
// is only written on the slow paths, under a mutex.
#pragma once

#include <atomic>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "coll/base/status.h"

namespace coll::record {

enum class CallState : uint8_t { Enqueued = 0, Started = 1, Completed = 2, Failed = 3 };
inline constexpr uint8_t kNone = 0xff;   // redop of a call that does not reduce; algo not chosen
inline constexpr uint8_t kBoard = 0xfe;  // algo: the board (tiny calls)

// What a call is, as the recorder stores it (numbers; names at dump time).
struct CallInfo {
  int64_t collSeq = -1;  // collectives: equal on every rank
  int64_t p2pSeq = -1;   // send/recv: n-th with that peer
  uint64_t count = 0;
  uint8_t kind = 0;      // sched::CollKind
  uint8_t dtype = 0;     // collDataType_t
  uint8_t redop = kNone; // collRedOp_t's built-ins, premulsum as 5
  uint8_t device = 0;    // 1: device buffers
  uint8_t algo = kNone;  // sched::Algo, kBoard, kNone
  uint8_t channels = 0;
  int32_t root = -1;     // root, or the peer of send/recv
};

struct DumpHeader {
  std::string comm;  // 16 hex digits
  int rank = 0, nranks = 1;
  std::string reason;   // timeout, dead_peer, peer_failed, mismatch, aborted, error, signal, api
  std::string message;  // the error, "" for signal/api
};

// Names for the dump: sched::CollKind, collDataType_t, the reduction op,
// sched::Algo.  Filled by core (which knows those enums); the recorder
// itself depends on none of them.
struct Names {
  const char* (*kind)(uint8_t) = nullptr;
  const char* (*dtype)(uint8_t) = nullptr;
  const char* (*redop)(uint8_t) = nullptr;
  const char* (*algo)(uint8_t) = nullptr;
};

class FlightRecorder {
 public:
  // entries == 0: off (every call below returns at once).
  explicit FlightRecorder(size_t entries);
  bool on() const { return !ring_.empty(); }
  size_t entries() const { return ring_.size(); }

  // A new call; returns its handle (its call number), used by the others.
  uint64_t begin(const CallInfo& c, CallState s);
  void start(uint64_t h);
  void end(uint64_t h, bool ok);
  void setAlgo(uint64_t h, uint8_t algo, uint8_t channels);
  // What a call still running waits on (executor's slow path, timeouts).
  void setWait(uint64_t h, int peer, uint32_t step, uint32_t nsteps, const std::string& what);
  void setError(uint64_t h, const std::string& error);

  // The dump, JSON lines (docs/flight-recorder.md), oldest call first.
  std::string render(const DumpHeader& h, const Names& names) const;
  // Writes render() to path (via a temporary file and rename).
  Status dump(const std::string& path, const DumpHeader& h, const Names& names) const;

 private:
  static constexpr int kWords = 10;
  struct alignas(64) Entry {
    std::atomic<uint64_t> version{0};  // odd while being written
    std::atomic<uint64_t> w[kWords];
  };
  Entry* slot(uint64_t h) { return &ring_[h % ring_.size()]; }
  // Sets words of entry h (still h's: not overwritten by a newer call).
  template <typename F>
  void modify(uint64_t h, F&& f);

  std::vector<Entry> ring_;
  std::atomic<uint64_t> recorded_{0};
  uint64_t tsc0_ = 0;
  int64_t realtime0_ = 0;
  mutable std::mutex textMu_;
  std::map<uint64_t, std::pair<std::string, std::string>> text_;  // handle -> (wait, error), recent calls only
};

}  // namespace coll::record
