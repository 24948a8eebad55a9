// fr_analyze.h — what one communicator's dumps say (docs/flight-recorder.md,
// "colltrace analyze"): the ranks without a dump, the first collective (by
// coll_seq) that not every rank that dumped completed and where each rank
// stands in it, arguments that differ between ranks on any coll_seq, each
// send/recv not completed beside its other half, and a one-line verdict.
//
// A ring holds a rank's newest calls, so a collective newer than a rank's
// newest one was never entered by it, while one older than its oldest entry
// is unknown when the ring has overwritten calls (it was most likely done).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "fr_dir.h"
#include "fr_dump.h"

namespace coll::trace {

enum class Presence {
  Entered,       // the rank's ring has the collective
  NeverEntered,  // its newest collective is older (or it made none)
  Unknown,       // older than its ring reaches, or missing from it
};

struct RankInColl {
  int rank = 0;
  Presence presence = Presence::Unknown;
  std::optional<FrCall> call;        // Entered: its entry
  std::optional<FrCall> newestColl;  // NeverEntered: its newest collective, if the ring has one
  std::optional<FrCall> newestCall;  // NeverEntered: its newest call of any kind
  std::optional<FrCall> oldestColl;  // Unknown: its oldest collective, if the ring has one
  bool truncated = false;            // its ring overwrote calls
};

struct StuckColl {
  int64_t collSeq = 0;
  FrOp op = FrOp::AllReduce;      // as the lowest rank that entered it recorded it
  std::vector<RankInColl> ranks;  // every rank that dumped, by rank
  std::vector<int> waiting() const;       // entered and not completed
  std::vector<int> neverEntered() const;
};

// One argument that differs: each value with the ranks that called with it.
struct ArgDiff {
  std::string field;  // op, count, dtype, redop, root
  std::vector<std::pair<std::string, std::vector<int>>> values;  // by first rank
};

struct CollMismatch {
  int64_t collSeq = 0;
  FrOp op = FrOp::AllReduce;  // the lowest rank's
  std::vector<ArgDiff> diffs;
};

enum class P2pSide {
  Posted,       // the call is in that rank's ring
  NeverPosted,  // the ring reaches back far enough and lacks it
  Unknown,      // the ring no longer reaches back to it
  NoDump,       // that rank's dump is missing or unreadable
};

// Rank `sender`'s send #p2pSeq to `receiver` and the receiver's recv
// #p2pSeq from it, at least one of them posted and not completed.
struct P2pPair {
  int sender = 0;
  int receiver = 0;
  int64_t p2pSeq = 0;
  P2pSide sendSide = P2pSide::Unknown;
  P2pSide recvSide = P2pSide::Unknown;
  std::optional<FrCall> send;
  std::optional<FrCall> recv;
  std::vector<std::string> differ;  // count, dtype: when both are posted and disagree
};

// A dump's header and what its ring holds.
struct RankDump {
  FrHeader header;
  size_t held = 0;          // calls in the ring
  int64_t firstSeq = -1;    // its oldest and newest seq (-1: empty)
  int64_t lastSeq = -1;
  bool truncated = false;   // the ring overwrote calls
};

struct CommReport {
  std::string comm;
  int nranks = 0;  // the largest any header gives
  std::vector<RankDump> dumps;                // by rank
  std::vector<int> missing;                   // ranks with no dump file
  std::vector<UnreadableDump> unreadable;     // ranks whose file could not be used
  std::vector<std::string> problems;          // headers that disagree with each other
  std::optional<StuckColl> stuck;
  std::vector<CollMismatch> mismatches;       // every coll_seq on two or more ranks, by coll_seq
  std::vector<P2pPair> p2p;                   // by sender, receiver, p2p_seq
  std::string verdict;                        // one line: "stuck: ...", "mismatch: ...", "ok: ..."
};

CommReport analyzeComm(const CommDumps& in);

// The verdict line for a report whose other members are filled in
// (fr_verdict.cc).
std::string verdictOf(const CommReport& r);

}  // namespace coll::trace
