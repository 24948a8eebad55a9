// fr_words.h — how colltrace's report and verdict name things: rank lists,
// calls, durations, and a dump's strings made safe for a terminal.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "fr_analyze.h"
#include "fr_dump.h"

namespace coll::trace {

// "rank 2", "ranks 0, 1, 3", "ranks 0-7, 9" (runs of three or more as a range).
std::string rankList(const std::vector<int>& ranks);
// rankList and the verb that agrees with it: ("rank 2", "waits") or ("ranks 0, 1", "wait").
std::string ranksDo(const std::vector<int>& ranks, std::string_view one, std::string_view many);
// "allreduce coll_seq 41"
std::string collName(FrOp op, int64_t collSeq);
// "allreduce coll_seq 41", "send #3 to rank 1", "recv #3 from rank 0"
std::string callName(const FrCall& c);
// "count 1024 float32 sum", "count 8 int32 root 0", "count 16 uint8"
std::string callArgs(const FrCall& c);
// "count differs (ranks 0, 1, 3: 1024; rank 2: 2048)", several joined by ", ".
std::string mismatchText(const CollMismatch& m);
// "allreduce coll_seq 41", or "coll_seq 41" when the op is what differs.
std::string mismatchName(const CollMismatch& m);
// "30.0 s", "250 ms", "12 us"
std::string duration(int64_t ns);
// The text with control characters (C0, DEL, C1) escaped as \uXXXX, so a
// dump cannot drive the terminal it is read on.
std::string printable(std::string_view s);

}  // namespace coll::trace
