// fr_analyze_test.cc — colltrace's analysis (tools/trace/fr_analyze.h) on
// the hand-written dumps in fixtures/ (a hang, a killed rank, a count
// mismatch, truncated rings, two communicators, a send without its recv, an
// unreadable file) and on dumps built here for the cases between.
#include <catch2/catch.hpp>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include <unistd.h>

#include "fr_analyze.h"
#include "fr_dir.h"
#include "fr_render.h"
#include "fr_words.h"

using namespace coll::trace;

namespace {

const std::string kFixtures = COLL_TRACE_FIXTURES;

DirDumps readFixture(const std::string& name) {
  auto r = readDumpDir(kFixtures + "/" + name);
  INFO(r.status().message());
  REQUIRE(r.isOk());
  return r.take();
}

// The one communicator of a fixture, analyzed.
CommReport analyzeFixture(const std::string& name) {
  DirDumps d = readFixture(name);
  REQUIRE(d.comms.size() == 1);
  for (const CommDumps& c : d.comms)
    for (const UnreadableDump& u : c.unreadable) FAIL_CHECK(u.error);
  return analyzeComm(d.comms[0]);
}

const RankInColl& at(const StuckColl& s, int rank) {
  for (const RankInColl& x : s.ranks)
    if (x.rank == rank) return x;
  FAIL("rank " << rank << " is not in the report");
  return s.ranks.front();
}

FrCall collCall(int64_t seq, int64_t collSeq, FrState state = FrState::Completed) {
  FrCall c;
  c.seq = seq;
  c.collSeq = collSeq;
  c.op = FrOp::AllReduce;
  c.count = 64;
  c.dtype = "float32";
  c.redop = "sum";
  c.buffer = "host";
  c.state = state;
  return c;
}

FrCall p2p(int64_t seq, FrOp op, int peer, int64_t k, FrState state = FrState::Completed) {
  FrCall c = collCall(seq, -1, state);
  c.op = op;
  c.p2pSeq = k;
  c.root = peer;
  c.redop = "";
  return c;
}

FrDump dump(int rank, int nranks, std::vector<FrCall> calls, int64_t recorded = -1) {
  FrDump d;
  d.header.comm = "0123456789abcdef";
  d.header.rank = rank;
  d.header.nranks = nranks;
  d.header.host = "h";
  d.header.reason = "signal";
  d.header.entries = 2000;
  d.header.recorded = recorded >= 0 ? recorded : calls.empty() ? 0 : calls.back().seq + 1;
  d.calls = std::move(calls);
  return d;
}

CommReport analyzeDumps(std::vector<FrDump> dumps, std::vector<UnreadableDump> unreadable = {}) {
  CommDumps c;
  c.comm = "0123456789abcdef";
  c.dumps = std::move(dumps);
  c.unreadable = std::move(unreadable);
  return analyzeComm(c);
}

bool hasLine(const std::string& text, const std::string& line) {
  return ("\n" + text).find("\n" + line + "\n") != std::string::npos;
}

}  // namespace

TEST_CASE("analyze: rank 2 of 4 never entered coll_seq 41, the others wait on it", "[trace][analyze]") {
  const CommReport r = analyzeFixture("hang");
  CHECK(r.comm == "3f2a9c0d11e5b7a4");
  CHECK(r.nranks == 4);
  CHECK(r.missing.empty());
  REQUIRE(r.stuck);
  CHECK(r.stuck->collSeq == 41);
  CHECK(r.stuck->op == FrOp::AllReduce);
  CHECK(r.stuck->neverEntered() == std::vector<int>{2});
  CHECK(r.stuck->waiting() == std::vector<int>{0, 1, 3});
  CHECK(at(*r.stuck, 2).presence == Presence::NeverEntered);
  REQUIRE(at(*r.stuck, 2).newestColl);
  CHECK(at(*r.stuck, 2).newestColl->collSeq == 40);
  CHECK(at(*r.stuck, 3).call->waitPeer == 2);
  CHECK(at(*r.stuck, 3).call->waitStep == 0);
  CHECK(at(*r.stuck, 3).call->nsteps == 6);
  CHECK(at(*r.stuck, 0).call->waitPeer == 3);
  CHECK(r.mismatches.empty());
  CHECK(r.p2p.empty());
  CHECK(r.verdict == "stuck: rank 2 (never entered allreduce coll_seq 41; ranks 0, 1, 3 wait on it)");
  const std::string text = renderReport(r);
  INFO(text);
  CHECK(hasLine(text, "  rank 2: never entered it; its newest collective: allreduce coll_seq 40 (completed)"));
  CHECK(hasLine(text, "first collective not completed by every rank that dumped: allreduce coll_seq 41 "
                      "(count 1024 float32 sum)"));
  CHECK_THAT(text, Catch::Contains("  rank 3: failed after 30 s: \"waiting for rank 2 in allreduce #41 step 0/6 "));
  CHECK_THAT(text, Catch::EndsWith("\nverdict: " + r.verdict + "\n"));
}

TEST_CASE("analyze: a killed rank wrote no file", "[trace][analyze]") {
  const CommReport r = analyzeFixture("killed");
  CHECK(r.missing == std::vector<int>{1});
  REQUIRE(r.stuck);
  CHECK(r.stuck->collSeq == 7);
  CHECK(r.stuck->waiting() == std::vector<int>{0, 2});
  CHECK(r.verdict == "stuck: rank 1 (wrote no dump; ranks 0, 2 wait on it in allreduce coll_seq 7)");
  CHECK(hasLine(renderReport(r), "rank 1 wrote no dump: killed, or it never got to dump"));
}

TEST_CASE("analyze: ranks disagree on count", "[trace][analyze]") {
  const CommReport r = analyzeFixture("mismatch");
  REQUIRE(r.stuck);
  CHECK(r.stuck->collSeq == 12);
  REQUIRE(r.mismatches.size() == 1);
  const CollMismatch& m = r.mismatches[0];
  CHECK(m.collSeq == 12);
  REQUIRE(m.diffs.size() == 1);
  CHECK(m.diffs[0].field == "count");
  REQUIRE(m.diffs[0].values.size() == 2);
  CHECK(m.diffs[0].values[0] == std::pair<std::string, std::vector<int>>{"1024", {0, 1, 3}});
  CHECK(m.diffs[0].values[1] == std::pair<std::string, std::vector<int>>{"2048", {2}});
  CHECK(r.verdict == "mismatch: broadcast coll_seq 12: count differs (ranks 0, 1, 3: 1024; rank 2: 2048)");
}

TEST_CASE("analyze: truncated rings: older is unknown, newer is never entered", "[trace][analyze]") {
  const CommReport r = analyzeFixture("truncated");
  REQUIRE(r.stuck);
  // Every ring is truncated at a different coll_seq; none of those is stuck.
  CHECK(r.stuck->collSeq == 41);
  CHECK(at(*r.stuck, 0).presence == Presence::Entered);
  CHECK(at(*r.stuck, 1).presence == Presence::Unknown);
  CHECK(at(*r.stuck, 1).truncated);
  CHECK(at(*r.stuck, 1).oldestColl->collSeq == 42);
  CHECK(at(*r.stuck, 2).presence == Presence::NeverEntered);
  CHECK(r.mismatches.empty());
  CHECK(r.verdict == "stuck: rank 2 (never entered broadcast coll_seq 41; rank 0 waits on it)");
  CHECK(hasLine(renderReport(r),
                "  rank 1: unknown: its ring starts later, at broadcast coll_seq 42 (older calls overwritten)"));
}

TEST_CASE("analyze: two communicators in one directory", "[trace][analyze]") {
  DirDumps d = readFixture("two_comms");
  REQUIRE(d.comms.size() == 2);
  CHECK(d.comms[0].comm == "a0a0a0a0a0a0a0a0");
  CHECK(d.comms[1].comm == "b1b1b1b1b1b1b1b1");
  const CommReport world = analyzeComm(d.comms[0]);
  const CommReport split = analyzeComm(d.comms[1]);
  CHECK_FALSE(world.stuck);
  CHECK(world.verdict == "ok: every call in the dumps completed");
  REQUIRE(split.stuck);
  CHECK(split.stuck->collSeq == 3);
  CHECK(split.verdict == "stuck: rank 1 (never entered allgather coll_seq 3; rank 0 waits on it)");
}

TEST_CASE("analyze: a send whose recv was never posted", "[trace][analyze]") {
  const CommReport r = analyzeFixture("p2p");
  CHECK_FALSE(r.stuck);
  REQUIRE(r.p2p.size() == 1);
  const P2pPair& p = r.p2p[0];
  CHECK(p.sender == 0);
  CHECK(p.receiver == 1);
  CHECK(p.p2pSeq == 1);
  CHECK(p.sendSide == P2pSide::Posted);
  CHECK(p.recvSide == P2pSide::NeverPosted);
  CHECK(p.send->state == FrState::Started);
  CHECK(r.verdict == "stuck: rank 1 (never posted recv #1 from rank 0; rank 0's send #1 to rank 1 waits on it)");
}

TEST_CASE("analyze: an unreadable dump is named, the rest analyzed", "[trace][analyze]") {
  DirDumps d = readFixture("broken");
  CHECK(d.anyUnreadable());
  REQUIRE(d.comms.size() == 1);
  REQUIRE(d.comms[0].unreadable.size() == 1);
  CHECK(d.comms[0].unreadable[0].rank == 1);
  CHECK_THAT(d.comms[0].unreadable[0].error,
             Catch::EndsWith("broken/coll_fr.0000000000000b0b.r1.jsonl:3: member \"count\" must be an integer, not a "
                             "string"));
  const CommReport r = analyzeComm(d.comms[0]);
  CHECK(r.missing.empty());
  REQUIRE(r.p2p.size() == 1);
  CHECK(r.p2p[0].recvSide == P2pSide::NoDump);
  CHECK(r.verdict == "stuck: rank 1 (its dump is unreadable; rank 0's send #1 to rank 1 waits on it)");
}

TEST_CASE("analyze: every fixture parses and its verdict ends its report", "[trace][analyze]") {
  for (const char* name : {"hang", "killed", "mismatch", "truncated", "two_comms", "p2p"}) {
    DirDumps d = readFixture(name);
    CHECK_FALSE(d.anyUnreadable());
    for (const CommDumps& c : d.comms) {
      const CommReport r = analyzeComm(c);
      CHECK_THAT(renderReport(r), Catch::EndsWith("\nverdict: " + r.verdict + "\n"));
    }
  }
}

TEST_CASE("analyze: mismatches on every coll_seq several ranks hold, even completed ones", "[trace][analyze]") {
  std::vector<FrCall> r0 = {collCall(0, 0), collCall(1, 1), collCall(2, 2), collCall(3, 3, FrState::Started)};
  std::vector<FrCall> r1 = {collCall(0, 0), collCall(1, 1), collCall(2, 2)};
  std::vector<FrCall> r2 = {collCall(0, 0), collCall(1, 1), collCall(2, 2), collCall(3, 3, FrState::Started)};
  r1[1].dtype = "float16";
  r2[1].dtype = "bfloat16";
  r1[2].redop = "max";
  r1[2].op = FrOp::Reduce;
  r1[2].root = 0;
  const CommReport r = analyzeDumps({dump(0, 3, r0), dump(1, 3, r1), dump(2, 3, r2)});
  REQUIRE(r.mismatches.size() == 2);
  CHECK(r.mismatches[0].collSeq == 1);
  REQUIRE(r.mismatches[0].diffs.size() == 1);
  CHECK(r.mismatches[0].diffs[0].values.size() == 3);
  CHECK(mismatchText(r.mismatches[0]) == "dtype differs (rank 0: float32; rank 1: float16; rank 2: bfloat16)");
  CHECK(r.mismatches[1].collSeq == 2);
  CHECK(mismatchName(r.mismatches[1]) == "coll_seq 2");
  CHECK(mismatchText(r.mismatches[1]) ==
        "op differs (ranks 0, 2: allreduce; rank 1: reduce), redop differs (ranks 0, 2: sum; rank 1: max), "
        "root differs (ranks 0, 2: -1; rank 1: 0)");
  // The hang is elsewhere: rank 1 never entered coll_seq 3.
  CHECK(r.verdict == "stuck: rank 1 (never entered allreduce coll_seq 3; ranks 0, 2 wait on it)");
  // Nothing else pending: the first mismatch is the verdict.
  r0.back().state = FrState::Completed;
  r2.back().state = FrState::Completed;
  r1.push_back(collCall(3, 3));
  const CommReport done = analyzeDumps({dump(0, 3, r0), dump(1, 3, r1), dump(2, 3, r2)});
  CHECK_FALSE(done.stuck);
  CHECK(done.verdict == "mismatch: allreduce coll_seq 1: dtype differs (rank 0: float32; rank 1: float16; rank 2: "
                        "bfloat16)");
}

TEST_CASE("analyze: a collective others completed is the first a rank never entered", "[trace][analyze]") {
  // Broadcast roots can finish without the others: rank 1 never got to
  // coll_seq 2, which ranks 0 and 2 completed before rank 0 stopped in 3.
  const std::vector<FrCall> r0 = {collCall(0, 0), collCall(1, 1), collCall(2, 2), collCall(3, 3, FrState::Started)};
  const std::vector<FrCall> r1 = {collCall(0, 0), collCall(1, 1)};
  const std::vector<FrCall> r2 = {collCall(0, 0), collCall(1, 1), collCall(2, 2), collCall(3, 3)};
  const CommReport r = analyzeDumps({dump(0, 3, r0), dump(1, 3, r1), dump(2, 3, r2)});
  REQUIRE(r.stuck);
  CHECK(r.stuck->collSeq == 2);
  CHECK(r.stuck->neverEntered() == std::vector<int>{1});
  CHECK(r.stuck->waiting().empty());
  CHECK(r.verdict == "stuck: rank 1 (never entered allreduce coll_seq 2)");
}

TEST_CASE("analyze: ranks that never entered and ranks without a dump, together", "[trace][analyze]") {
  const std::vector<FrCall> in = {collCall(0, 0), collCall(1, 1, FrState::Started)};
  const std::vector<FrCall> out = {collCall(0, 0)};
  CommReport r = analyzeDumps({dump(0, 5, in), dump(1, 5, in), dump(2, 5, out)});
  CHECK(r.verdict == "stuck: ranks 2-4 (rank 2 never entered allreduce coll_seq 1; ranks 3, 4 wrote no dump; "
                     "ranks 0, 1 wait on it)");
  r = analyzeDumps({dump(0, 5, in), dump(1, 5, in), dump(2, 5, out)}, {{4, "x:1: bad"}});
  CHECK(r.missing == std::vector<int>{3});
  CHECK(r.verdict == "stuck: ranks 2-4 (rank 2 never entered allreduce coll_seq 1; rank 3 wrote no dump; rank 4's "
                     "dump is unreadable; ranks 0, 1 wait on it)");
  r = analyzeDumps({dump(0, 5, in), dump(1, 5, in), dump(2, 5, in)}, {{4, "x:1: bad"}});
  CHECK(r.verdict == "stuck: ranks 3, 4 (rank 3 wrote no dump; rank 4's dump is unreadable; ranks 0-2 wait on it in "
                     "allreduce coll_seq 1)");
  r = analyzeDumps({dump(0, 3, in), dump(1, 3, in)}, {{2, "x:1: bad"}});
  CHECK(r.verdict == "stuck: rank 2 (its dump is unreadable; ranks 0, 1 wait on it in allreduce coll_seq 1)");
}

TEST_CASE("analyze: every rank entered: who waits on whom", "[trace][analyze]") {
  std::vector<FrDump> dumps;
  for (int rank = 0; rank < 3; ++rank) {
    FrCall c = collCall(5, 5, FrState::Started);
    c.waitPeer = rank == 2 ? 0 : 2;
    dumps.push_back(dump(rank, 3, {collCall(4, 4), c}, 6));
  }
  dumps[1].calls[1].state = FrState::Completed;  // rank 1 got through
  const CommReport r = analyzeDumps(dumps);
  REQUIRE(r.stuck);
  CHECK(r.stuck->collSeq == 5);
  CHECK(r.stuck->neverEntered().empty());
  CHECK(r.verdict == "stuck: inside allreduce coll_seq 5, which every rank that dumped entered (rank 2 waits on "
                     "rank 0; rank 0 waits on rank 2)");
  CHECK(hasLine(renderReport(r), "  rank 0: started, waits on rank 2"));
}

TEST_CASE("analyze: a rank with no collective: never entered, or unknown when its ring overwrote", "[trace][analyze]") {
  const std::vector<FrCall> waiting = {collCall(0, 0), collCall(1, 1, FrState::Started)};
  // Rank 1 made only send/recv, and its ring has every call: it never got to coll_seq 0.
  CommReport r = analyzeDumps({dump(0, 2, waiting), dump(1, 2, {p2p(0, FrOp::Send, 0, 0)})});
  REQUIRE(r.stuck);
  CHECK(r.stuck->collSeq == 0);
  CHECK(at(*r.stuck, 1).presence == Presence::NeverEntered);
  CHECK(at(*r.stuck, 1).newestCall->op == FrOp::Send);
  CHECK(r.verdict == "stuck: rank 1 (never entered allreduce coll_seq 0)");
  // The same ring after overwriting: unknown; rank 0's own coll_seq 1 is stuck.
  r = analyzeDumps({dump(0, 2, waiting), dump(1, 2, {p2p(9, FrOp::Send, 0, 0)})});
  REQUIRE(r.stuck);
  CHECK(r.stuck->collSeq == 1);
  CHECK(at(*r.stuck, 1).presence == Presence::Unknown);
  CHECK(r.verdict == "stuck: inside allreduce coll_seq 1, entered by rank 0, unknown on rank 1 (rank 0 waits on no "
                     "rank it names)");
}

TEST_CASE("analyze: send/recv pairs: both posted, overwritten, no dump", "[trace][analyze]") {
  // Rank 0: recv #4 from 1 started; send #2 to 2 started.  Rank 1: its send
  // #4 to 0 started too; its ring was overwritten and holds recv #7 from 2
  // only.  Rank 2: no dump.  Rank 1's recv #6 from 2... is before its ring.
  const std::vector<FrCall> r0 = {p2p(0, FrOp::Recv, 1, 4, FrState::Started), p2p(1, FrOp::Send, 2, 2, FrState::Started)};
  const std::vector<FrCall> r1 = {p2p(50, FrOp::Send, 0, 4, FrState::Started), p2p(51, FrOp::Recv, 2, 7, FrState::Started)};
  FrDump d1 = dump(1, 3, r1);
  const CommReport r = analyzeDumps({dump(0, 3, r0), d1});
  CHECK(r.missing == std::vector<int>{2});
  REQUIRE(r.p2p.size() == 3);
  // (0 -> 2 #2): rank 2 has no dump.
  CHECK(r.p2p[0].sender == 0);
  CHECK(r.p2p[0].receiver == 2);
  CHECK(r.p2p[0].recvSide == P2pSide::NoDump);
  // (1 -> 0 #4): both posted, neither completed.
  CHECK(r.p2p[1].sender == 1);
  CHECK(r.p2p[1].sendSide == P2pSide::Posted);
  CHECK(r.p2p[1].recvSide == P2pSide::Posted);
  CHECK(r.p2p[1].differ.empty());
  // (2 -> 1 #7): the sender left no dump.
  CHECK(r.p2p[2].sendSide == P2pSide::NoDump);
  CHECK(r.verdict == "stuck: rank 2 (wrote no dump; rank 0's send #2 to rank 2 waits on it)");

  // A recv the receiver's overwritten ring cannot show, and one it shows it never posted.
  const std::vector<FrCall> s0 = {p2p(0, FrOp::Send, 1, 3, FrState::Started), p2p(1, FrOp::Send, 1, 4, FrState::Started)};
  const std::vector<FrCall> s1 = {p2p(90, FrOp::Recv, 0, 4, FrState::Started)};
  const CommReport t = analyzeDumps({dump(0, 2, s0), dump(1, 2, s1)});
  REQUIRE(t.p2p.size() == 2);
  CHECK(t.p2p[0].p2pSeq == 3);
  CHECK(t.p2p[0].recvSide == P2pSide::Unknown);
  CHECK(t.p2p[1].recvSide == P2pSide::Posted);
  CHECK(t.verdict == "stuck: send #3 from rank 0 to rank 1 (the send started, the recv unknown)");
  const std::vector<FrCall> u1 = {p2p(90, FrOp::Recv, 0, 2)};
  const CommReport u = analyzeDumps({dump(0, 2, s0), dump(1, 2, u1)});
  CHECK(u.p2p[0].recvSide == P2pSide::NeverPosted);  // its recv #2 from 0 is there, #3 is not
  CHECK(u.verdict == "stuck: rank 1 (never posted recv #3 from rank 0; rank 0's send #3 to rank 1 waits on it)");

  // Both posted with different counts.
  std::vector<FrCall> v1 = {p2p(0, FrOp::Recv, 0, 3, FrState::Started)};
  v1[0].count = 128;
  const CommReport v = analyzeDumps({dump(0, 2, s0), dump(1, 2, v1)});
  CHECK(v.p2p[0].differ == std::vector<std::string>{"count"});
  CHECK(v.verdict == "mismatch: rank 0's send #3 to rank 1 and rank 1's recv #3 from rank 0: count differs (send 64, "
                     "recv 128)");
}

TEST_CASE("analyze: headers that disagree, nothing pending, nothing readable", "[trace][analyze]") {
  CommReport r = analyzeDumps({dump(0, 2, {collCall(0, 0)}), dump(1, 3, {collCall(0, 0)})});
  CHECK(r.nranks == 3);
  CHECK(r.missing == std::vector<int>{2});
  REQUIRE(r.problems.size() == 1);
  CHECK(r.problems[0] == "rank 0's header says nranks 2, another's 3");
  CHECK(r.verdict == "no hang in the dumps: every call they hold completed; rank 2 wrote no dump");
  r = analyzeDumps({dump(0, 8, {collCall(0, 0)}), dump(1, 8, {collCall(0, 0)})});
  CHECK(r.missing == std::vector<int>{2, 3, 4, 5, 6, 7});
  CHECK(hasLine(renderReport(r), "ranks 2-7 wrote no dump: killed, or they never got to dump"));
  r = analyzeDumps({}, {{0, "x: cannot open"}});
  CHECK(r.verdict == "unknown: no dump of this communicator could be read");
  CHECK_THAT(renderReport(r), Catch::Contains("rank 0's dump is unreadable: x: cannot open"));
}

TEST_CASE("words: rank lists, durations, terminal-safe strings", "[trace][words]") {
  CHECK(rankList({2}) == "rank 2");
  CHECK(rankList({0, 1, 3}) == "ranks 0, 1, 3");
  CHECK(rankList({0, 1, 2, 3, 5, 7, 8, 9, 10}) == "ranks 0-3, 5, 7-10");
  CHECK(ranksDo({1}, "waits", "wait") == "rank 1 waits");
  CHECK(ranksDo({1, 2}, "waits", "wait") == "ranks 1, 2 wait");
  CHECK(duration(30'000'000'000) == "30 s");
  CHECK(duration(2'500'000'000) == "2.5 s");
  CHECK(duration(87'000'000) == "87 ms");
  CHECK(duration(12'000) == "12 us");
  CHECK(printable("a\x1b[2Jb\x7f\xC2\x9b" "c\xC3\xA9") == "a\\u001b[2Jb\\u007f\\u009bc\xC3\xA9");
}

TEST_CASE("dir: dump file names", "[trace][dir]") {
  auto n = parseDumpFileName("coll_fr.3f2a9c0d11e5b7a4.r12.jsonl");
  REQUIRE(n);
  CHECK(n->comm == "3f2a9c0d11e5b7a4");
  CHECK(n->rank == 12);
  CHECK(parseDumpFileName("coll_fr.3f2a9c0d11e5b7a4.r0.jsonl")->rank == 0);
  for (const char* bad : {"coll_fr.3f2a9c0d11e5b7a.r0.jsonl", "coll_fr.3f2a9c0d11e5b7ag.r0.jsonl",
                          "coll_fr.3f2a9c0d11e5b7a4.r.jsonl", "coll_fr.3f2a9c0d11e5b7a4.r01.jsonl",
                          "coll_fr.3f2a9c0d11e5b7a4.r1x.jsonl", "coll_fr.3f2a9c0d11e5b7a4.r12345678.jsonl",
                          "coll_fr.3f2a9c0d11e5b7a4.r1.json", "coll_fr.3f2a9c0d11e5b7a4.x1.jsonl", "fr.jsonl", ""})
    CHECK_FALSE(parseDumpFileName(bad));
}

TEST_CASE("dir: a missing directory, stray names, a header that contradicts its name", "[trace][dir]") {
  auto none = readDumpDir(kFixtures + "/no-such-dir");
  REQUIRE_FALSE(none.isOk());
  CHECK_THAT(none.status().message(), Catch::Contains("no-such-dir: cannot list the directory"));

  namespace fs = std::filesystem;
  const fs::path dir = fs::temp_directory_path() / ("coll_trace_test." + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir / "coll_fr.0123456789abcdef.r3.jsonl");  // a directory with a dump's name
  std::ifstream src(kFixtures + "/p2p/coll_fr.0000000000000b0b.r0.jsonl");
  const std::string text((std::istreambuf_iterator<char>(src)), std::istreambuf_iterator<char>());
  std::ofstream(dir / "coll_fr.0000000000000b0b.r1.jsonl") << text;  // rank 0's file under rank 1's name
  std::ofstream(dir / "coll_fr.notes.txt") << "x";
  std::ofstream(dir / "README") << "x";
  auto r = readDumpDir(dir.string());
  fs::remove_all(dir);
  REQUIRE(r.isOk());
  CHECK(r.value().ignored == std::vector<std::string>{"coll_fr.notes.txt"});
  REQUIRE(r.value().comms.size() == 2);
  REQUIRE(r.value().comms[0].unreadable.size() == 1);
  CHECK_THAT(r.value().comms[0].unreadable[0].error,
             Catch::EndsWith("coll_fr.0000000000000b0b.r1.jsonl:1: the header says comm 0000000000000b0b rank 0, the "
                             "file name comm 0000000000000b0b rank 1"));
  REQUIRE(r.value().comms[1].unreadable.size() == 1);
  CHECK(r.value().comms[1].unreadable[0].rank == 3);
  CHECK_THAT(r.value().comms[1].unreadable[0].error, Catch::EndsWith(": not a regular file"));
}
