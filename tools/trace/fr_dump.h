// fr_dump.h — one flight recorder dump (docs/flight-recorder.md, "File
// format (version 1)"): the header line and the calls still in the ring,
// oldest first.  parseDump reads a file's text; formatDump writes the same
// structs back in the format (for tests and the fuzzer's round trip).
//
// The parser holds the writer to the contract: every member the format lists
// is required with its type, unknown members are ignored, and what the
// analysis relies on is checked (ranks in range, seq consecutive, coll_seq
// and each peer's p2p_seq increasing, -1 where the format says so).  Strings
// it only shows (dtype, redop, buffer, algo, reason) are kept as written.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "coll/base/status.h"

namespace coll::trace {

inline constexpr int kFrVersion = 1;
// A line longer than this is refused: no dump line comes near it.
inline constexpr size_t kFrMaxLineBytes = size_t{1} << 20;

enum class FrOp { AllReduce, AllGather, Broadcast, ReduceScatter, Reduce, Send, Recv };
enum class FrState { Enqueued, Started, Completed, Failed };

const char* frOpName(FrOp op);        // "allreduce", ... as in the file
const char* frStateName(FrState s);  // "enqueued", ...
inline bool isP2p(FrOp op) { return op == FrOp::Send || op == FrOp::Recv; }

struct FrHeader {
  int version = kFrVersion;
  std::string comm;  // 16 hex digits
  int rank = 0;
  int nranks = 0;
  std::string host;
  int64_t pid = 0;
  std::string reason;
  std::string message;
  int64_t timeNs = 0;
  int64_t entries = 0;   // the ring's size
  int64_t recorded = 0;  // calls recorded since the communicator was made
  bool operator==(const FrHeader&) const = default;
};

struct FrCall {
  int64_t seq = 0;
  int64_t collSeq = -1;  // collectives: the communicator's number; -1 for send/recv
  int64_t p2pSeq = -1;   // send/recv: the n-th to/from that peer; -1 for collectives
  FrOp op = FrOp::AllReduce;
  int64_t count = 0;
  std::string dtype;
  std::string redop;
  int root = -1;  // root of broadcast/reduce, peer of send/recv, else -1
  std::string buffer;
  std::string algo;
  int channels = 0;
  FrState state = FrState::Enqueued;
  int64_t tEnqueueNs = 0;
  int64_t tStartNs = 0;
  int64_t tEndNs = 0;
  int waitPeer = -1;
  int64_t waitStep = 0;
  int64_t nsteps = 0;
  std::string waitWhat;
  std::string error;
  bool operator==(const FrCall&) const = default;
};

struct FrDump {
  FrHeader header;
  std::vector<FrCall> calls;  // oldest first
  bool operator==(const FrDump&) const = default;
  // The ring no longer holds the communicator's first calls.
  bool truncated() const { return calls.empty() ? header.recorded > 0 : calls.front().seq > 0; }
};

// Parses a dump file's text.  `name` is the file's name for messages: every
// error is collInvalidArgument, "NAME:LINE: what is wrong".
Result<FrDump> parseDump(std::string_view name, std::string_view text);

// The dump in the file format, members in the format's order, one line
// each, every line ending in '\n'.
std::string formatDump(const FrDump& dump);

}  // namespace coll::trace
