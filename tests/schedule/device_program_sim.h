// device_program_sim.h — the device program (schedule/device_program.h)
// run on the host: every rank's program, split into blocks exactly as the
// CUDA kernel splits it (channelChunk) and into launches (splitProgram, with
// the launches call_memory.h's dependencies start), executed on byte arrays
// with every access recorded.  device_program_test.cc drives it.
//
// Calls may share user buffers (one call's send buffer another's receive
// buffer, say), so a group whose calls depend on each other runs as the
// device path runs it.  What it checks:
//   * every access stays inside its buffer, and non-roots never touch the
//     buffers NCCL lets them pass as NULL;
//   * the final user memory equals the calls run one after another on the
//     host (wrapping integer sum; pre-multiply by 3 where the call says so);
//   * ranks' programs have the same length and barriers at the same steps;
//   * no race: two accesses to the same byte, one a write, are ordered only
//     by the same block's barriers (same block, different epochs), or by a
//     launch boundary on either rank between them; and within one block, two
//     steps of one epoch never touch the same byte (no barrier there).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <tuple>
#include <vector>

#include "schedule/device_program.h"

namespace devsim {

using coll::sched::CollKind;
using coll::sched::DevBuf;
using coll::sched::DevProgramCall;
using coll::sched::DevStep;

// Where a call's send or receive buffer starts: its own buffer (call < 0),
// or the start of call `call`'s send (recv false) or receive buffer.
struct BufferUse {
  int call = -1;
  bool recv = false;
};

struct SimCall {
  DevProgramCall c;
  bool premul = false;
  bool inPlace = false;  // own buffer only
  BufferUse send, recv;
};

SimCall simCall(CollKind k, uint64_t count, uint32_t es, int root = 0, bool inPlace = false, bool premul = false);

class Job {
 public:
  // cutDependent false: launches only as maxSteps cuts them, even where a
  // call depends on an earlier one (what the race check must catch).
  Job(int n, int channels, size_t regionBytes, size_t oneShot, size_t maxSteps, std::vector<SimCall> calls,
      bool cutDependent = true);

  // Every rank's program has the same shape; without dependencies, splitting
  // gives the same cuts.
  void checkShapes() const;
  // Runs every epoch: all ranks' blocks, in an order that differs by seed.
  void run(uint64_t seed);
  // The first race found, or "".
  std::string race() const;
  // Compares every rank's user memory with the calls run one after another.
  void checkResults() const;
  // Launches rank r's program was cut into.
  size_t launches(int r) const { return ends_[static_cast<size_t>(r)].size(); }

  std::vector<std::vector<DevStep>>& programs() { return programs_; }

 private:
  enum Space { kUser = 0, kInput = 1, kResult = 2 };
  // A logical buffer: its space and owner, the index of its bytes there (a
  // user buffer's number), its byte offset and its logical size.
  struct Place {
    int owner, space, buf;
    uint64_t off, size;
  };
  struct Access {
    int rank, block, epoch, step;
    uint64_t lo, hi;
    bool write;
  };
  struct Loc {
    int buf;
    uint64_t off;
  };

  uint64_t count(size_t i) const { return calls_[i].c.count; }
  uint32_t es(size_t i) const { return calls_[i].c.elemSize; }
  CollKind kind(size_t i) const { return calls_[i].c.kind; }
  uint64_t sendBytes(size_t i, int r) const;
  uint64_t recvBytes(size_t i, int r) const;
  void placeBuffers(std::vector<std::vector<Loc>>& send, std::vector<std::vector<Loc>>& recv);
  std::vector<size_t> launchStarts(int r) const;
  int launchAt(int rank, int epoch) const { return launchOfEpoch_[static_cast<size_t>(rank)][static_cast<size_t>(epoch)]; }

  Place place(int rank, size_t call, DevBuf b, int srcRank, uint64_t off) const;
  uint8_t* bytes(const Place& p, uint64_t lo, uint64_t hi, uint64_t logicalOff);
  void record(const Place& p, int rank, int block, int epoch, int step, uint64_t lo, uint64_t hi, bool write);
  void exec(int r, int b, int epoch, int step, const DevStep& st);
  // The calls run one after another on `mem` (every rank's user buffers).
  void reference(std::vector<std::vector<std::vector<uint8_t>>>& mem) const;

  int n_, channels_;
  size_t region_;
  std::vector<SimCall> calls_;
  size_t maxSteps_;
  bool cutDependent_;
  uint64_t unit_ = 0;
  std::vector<std::vector<DevStep>> programs_;
  std::vector<std::vector<size_t>> firstStep_;       // [rank][call]: where its steps begin
  std::vector<std::vector<Loc>> sendLoc_, recvLoc_;  // [rank][call]
  std::vector<std::vector<size_t>> ends_;            // [rank]: splitProgram's launch ends
  std::vector<std::vector<int>> launchOfEpoch_;      // [rank][epoch]
  std::vector<std::vector<std::vector<uint8_t>>> user_, initialUser_;  // [rank][buffer]
  std::vector<std::vector<uint8_t>> input_, result_;
  std::map<std::tuple<int, int, int>, std::vector<Access>> accesses_;
};

}  // namespace devsim
