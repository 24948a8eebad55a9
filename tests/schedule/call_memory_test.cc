// The user memory a device call touches (schedule/call_memory.h) and the
// calls of a group that must begin a launch of their own.
#include <catch2/catch.hpp>

#include <vector>

#include "schedule/call_memory.h"

using coll::sched::ByteRange;
using coll::sched::CallMemory;
using coll::sched::callMemory;
using coll::sched::CollKind;
using coll::sched::dependentCalls;
using coll::sched::dependsOn;

namespace {

const void* at(uintptr_t a) { return reinterpret_cast<const void*>(a); }

bool same(const ByteRange& r, uintptr_t lo, uintptr_t hi) { return r.lo == lo && r.hi == hi; }

// A call that reads [readLo, readHi) and writes [writeLo, writeHi).
CallMemory rw(uintptr_t readLo, uintptr_t readHi, uintptr_t writeLo, uintptr_t writeHi) {
  CallMemory m;
  m.send = {readLo, readHi};
  m.recv = {writeLo, writeHi};
  return m;
}

}  // namespace

TEST_CASE("call memory: the bytes each collective reads and writes, per rank", "[call_memory]") {
  // 10 elements of 4 bytes on rank 1 of 3, root 2.
  const auto m = [](CollKind k, int rank) { return callMemory(k, 10, 4, 2, rank, 3, at(1000), at(5000), nullptr); };
  CHECK(same(m(CollKind::AllReduce, 1).send, 1000, 1040));
  CHECK(same(m(CollKind::AllReduce, 1).recv, 5000, 5040));
  CHECK(same(m(CollKind::AllGather, 1).send, 1000, 1040));
  CHECK(same(m(CollKind::AllGather, 1).recv, 5000, 5120));
  CHECK(same(m(CollKind::ReduceScatter, 1).send, 1000, 1120));
  CHECK(same(m(CollKind::ReduceScatter, 1).recv, 5000, 5040));
  CHECK(m(CollKind::Broadcast, 1).send.empty());  // a non-root reads no send buffer
  CHECK(same(m(CollKind::Broadcast, 2).send, 1000, 1040));
  CHECK(m(CollKind::Reduce, 1).recv.empty());  // a non-root writes no receive buffer
  CHECK(same(m(CollKind::Reduce, 2).recv, 5000, 5040));
  CHECK(m(CollKind::AllReduce, 1).scalar.empty());
  CHECK(same(callMemory(CollKind::AllReduce, 10, 8, 0, 0, 2, at(1), at(2), at(900)).scalar, 900, 908));
  // Zero elements and NULL buffers touch nothing.
  const CallMemory none = callMemory(CollKind::AllReduce, 0, 4, 0, 0, 2, at(1000), at(1000), nullptr);
  CHECK((none.send.empty() && none.recv.empty()));
  CHECK(callMemory(CollKind::Reduce, 10, 4, 0, 1, 2, at(1000), nullptr, nullptr).recv.empty());
}

TEST_CASE("call memory: read after write, write after read, write after write", "[call_memory]") {
  const CallMemory a = rw(0, 100, 200, 300);
  CHECK(dependsOn(rw(250, 260, 1000, 1100), a));  // reads what a writes
  CHECK(dependsOn(rw(1000, 1100, 50, 60), a));    // writes what a reads
  CHECK(dependsOn(rw(1000, 1100, 299, 400), a));  // writes what a writes
  CHECK_FALSE(dependsOn(rw(50, 100, 1000, 1100), a));  // both read: no order needed
  CHECK_FALSE(dependsOn(rw(300, 400, 100, 200), a));   // ranges that only touch
  CHECK_FALSE(dependsOn(a, CallMemory{}));
  CallMemory scaled = rw(1000, 1100, 1200, 1300);
  scaled.scalar = {250, 254};  // a pre-multiply scalar an earlier call computed
  CHECK(dependsOn(scaled, a));
  CallMemory scalarOfLater = rw(0, 0, 0, 0);
  scalarOfLater.scalar = {1250, 1254};
  CHECK(dependsOn(rw(0, 0, 1248, 1252), scalarOfLater));  // overwrites a scalar an earlier call reads
}

TEST_CASE("call memory: the calls that begin a launch", "[call_memory]") {
  CHECK(dependentCalls({}).empty());
  // In place twice: the second waits for the first.
  CHECK(dependentCalls({rw(0, 100, 0, 100), rw(0, 100, 0, 100)}) == std::vector<size_t>{1});
  // Independent calls share a launch.
  CHECK(dependentCalls({rw(0, 100, 0, 100), rw(100, 200, 100, 200), rw(200, 300, 300, 400)}).empty());
  // Call 2 reads call 0's output and call 3 call 2's; call 4 reads call 0's
  // output too, but call 0 ran in an earlier launch than call 3's.
  const std::vector<CallMemory> chain = {rw(0, 10, 100, 110), rw(500, 510, 600, 610), rw(100, 110, 200, 210),
                                         rw(200, 210, 300, 310), rw(100, 110, 400, 410)};
  CHECK(dependentCalls(chain) == std::vector<size_t>{2, 3});
}
