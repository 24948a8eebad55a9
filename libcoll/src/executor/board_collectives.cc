// board_collectives.cc — see board_collectives.h.
#include "executor/board_collectives.h"

#include <fmt/format.h>
#include <sched.h>

#include <algorithm>
#include <cstring>
#include <string>

#include "coll/base/clock.h"

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define COLL_BOARD_RELAX() _mm_pause()
#else
#define COLL_BOARD_RELAX() asm volatile("" ::: "memory")
#endif

namespace coll::exec {
namespace {

using transport::Board;

// Peers a rank still waits for: a bit each (boards serve at most 64 ranks
// here; larger communicators wait for peers one by one, in [next_, end_)).
class PeerSet {
 public:
  template <class Ready>
  void refresh(int me, Ready ready) {
    if (!big_) {
      for (uint64_t left = bits_; left != 0; left &= left - 1)
        if (ready(__builtin_ctzll(left))) bits_ &= ~(uint64_t{1} << __builtin_ctzll(left));
      return;
    }
    while (next_ < end_ && (next_ == me || ready(next_))) ++next_;
  }
  // Every rank but `me`, or only rank `only` (>= 0).
  void fill(int n, int me, int only) {
    big_ = n > 64;
    bits_ = 0;
    next_ = only >= 0 ? only : 0;
    end_ = only >= 0 ? only + 1 : n;
    if (!big_)
      for (int q = next_; q < end_; ++q)
        if (q != me) bits_ |= uint64_t{1} << q;
  }
  bool empty() const { return big_ ? next_ >= end_ : bits_ == 0; }
  int lowest() const { return big_ ? next_ : __builtin_ctzll(bits_); }
  bool has(int q) const { return big_ ? q >= next_ && q < end_ : ((bits_ >> q) & 1) != 0; }

 private:
  uint64_t bits_ = 0;
  int next_ = 0;
  int end_ = 0;
  bool big_ = false;
};

// A bounded wait until ready(q) holds for every peer q (or for `only`, when
// >= 0).  All pending peers are polled each round, so a rank never yields
// for one peer while another is ready to be read: which peer publishes
// first depends on how the scheduler placed the ranks on cores.  Spins comm.spinBudget rounds, then
// yields; every yield checks abort, failed and dead peers, and the deadline.
// `what` names the wait in errors.
template <class Ready>
Status waitAll(const BoardCall& c, const char* what, Ready ready, int only = -1) {
  const CommView& comm = *c.comm;
  const int n = comm.nranks;
  PeerSet pending;
  pending.fill(n, comm.rank, only);
  pending.refresh(comm.rank, ready);
  if (pending.empty()) return Status::ok();
  int64_t start = 0;  // read at the first yield: the spins take microseconds
  for (uint32_t i = 0;; ++i) {
    pending.refresh(comm.rank, ready);
    if (pending.empty()) return Status::ok();
    if (i < comm.spinBudget) {
      COLL_BOARD_RELAX();
      continue;
    }
    if (i == comm.spinBudget) start = nowNs();
    sched_yield();
    if (comm.aborted != nullptr && comm.aborted->load(std::memory_order_relaxed))
      return makeError(collAborted, "rank {}: communicator aborted (collCommAbort)", comm.rank);
    if ((i & 15) != 0) continue;
    Status s = comm.transport->checkPeers();
    // A peer that failed after it published what we wait for (it went on to
    // a later call, failed there and told us) does not fail this call: a
    // rank descheduled for a while must end it as the others did.
    pending.refresh(comm.rank, ready);
    if (pending.empty()) return Status::ok();
    if (!s.isOk()) return makeError(s.code(), "rank {}: {} while {} ({})", comm.rank, s.message(), what, describe(c.sig));
    for (int peer : comm.transport->deadPeers()) {
      if (peer < 0 || peer >= n || !pending.has(peer) || ready(peer)) continue;
      Status notice = comm.transport->checkPeers();
      if (!notice.isOk()) return makeError(notice.code(), "rank {}: {}", comm.rank, notice.message());
      return makeError(collRemoteError, "rank {}: rank {} died (its process is gone) while {} ({})", comm.rank, peer,
                       what, describe(c.sig));
    }
    const int64_t idleMs = (nowNs() - start) / 1000000;
    if (comm.timeoutMs > 0 && idleMs >= comm.timeoutMs) {
      std::string stuck;
      for (int q = 0; q < n; ++q)
        if (q != comm.rank && pending.has(q) && !ready(q)) {
          if (!stuck.empty()) stuck += ", ";
          stuck += std::to_string(q);
        }
      return makeError(collTimeout, "rank {} timed out after {} ms without progress (COLL_TIMEOUT), {} rank {} in {}; "
                       "stuck: rank(s) {}", comm.rank, idleMs, what, pending.lowest(), describe(c.sig), stuck);
    }
  }
}

Status fail(const BoardCall& c, Status s) {
  c.comm->transport->notifyPeers(s.message());
  return s;
}

}  // namespace

std::vector<Board*> collectBoards(const CommView& comm) {
  std::vector<Board*> boards;
  if (comm.nranks < 2 || comm.transport == nullptr) return boards;
  // Every rank must reach every rank's board (the same answer on all ranks).
  for (int r = 0; r < comm.nranks; ++r) {
    Board* b = comm.transport->board(r);
    if (b == nullptr) return {};
    boards.push_back(b);
  }
  return boards;
}

bool boardFits(sched::CollKind kind, size_t count, size_t elemSize) {
  using sched::CollKind;
  const bool kindFits = kind == CollKind::AllReduce || kind == CollKind::Reduce || kind == CollKind::Broadcast ||
                        kind == CollKind::AllGather;
  return kindFits && count > 0 && count <= transport::kBoardPayload / elemSize;
}

Status boardCollective(const BoardCall& c) {
  using sched::CollKind;
  const CommView& comm = *c.comm;
  const int n = comm.nranks, me = comm.rank;
  const uint64_t j = c.op;
  constexpr uint64_t K = transport::kBoardLines;
  const size_t slot = j % K;
  Board* const* boards = comm.boards;
  const bool reduces = c.kind == CollKind::AllReduce || c.kind == CollKind::Reduce;

  // 1. Every peer finished op j-K, whose line we are about to rewrite.
  // finished[q] remembers the latest op q was seen to have finished, so a
  // rank that reads no lines (a broadcast's root) looks at each peer's
  // words about once every K calls, not every call.
  uint64_t* const finished = comm.boardFinished;
  if (j > K) {
    Status s = waitAll(c, "waiting for an earlier board op of", [&](int q) {
      if (finished[q] >= j - K) return true;
      const Board* b = boards[q];
      if (b->line[(j - 1) % K].op.load(std::memory_order_acquire) >= j - 1) {
        finished[q] = j - 2;  // it began op j-1
        return true;
      }
      finished[q] = std::max(finished[q], b->done.load(std::memory_order_acquire));
      return finished[q] >= j - K;
    });
    if (!s.isOk()) return fail(c, s);
  }

  // 2. Publish this rank's part, the signature and the op number.
  transport::BoardLine& mine = boards[me]->line[slot];
  const size_t bytes = c.count * c.elemSize;
  const bool hasPart = c.kind != CollKind::Broadcast || me == c.root;
  if (hasPart) {
    if (reduces && c.fn.premul) kernels::reduce(c.fn, mine.payload, nullptr, c.send, c.count, true, false);
    else std::memcpy(mine.payload, c.send, bytes);
  }
  uint64_t words[2] = {0, 0};
  (void)packSignature(c.sig, words);
  mine.sig[0] = words[0];
  mine.sig[1] = words[1];
  mine.op.store(j, std::memory_order_release);

  // 3. The lines this rank needs, of op j; the calls must match.
  const bool readsAll = c.kind == CollKind::AllReduce || c.kind == CollKind::AllGather ||
                        (c.kind == CollKind::Reduce && me == c.root) || c.checkAll;
  const bool readsRoot = c.kind == CollKind::Broadcast && me != c.root && !c.checkAll;
  if (readsAll || readsRoot) {
    const int only = readsRoot ? c.root : -1;
    Status arrived = waitAll(
        c, "waiting for", [&](int q) { return boards[q]->line[slot].op.load(std::memory_order_acquire) >= j; }, only);
    if (!arrived.isOk()) return fail(c, arrived);
    for (int q = 0; q < n; ++q)
      if (readsAll || q == c.root) finished[q] = std::max(finished[q], j - 1);  // it began op j
    for (int q = readsRoot ? c.root : 0; q < (readsRoot ? c.root + 1 : n); ++q) {
      if (q == me) continue;
      const transport::BoardLine& theirs = boards[q]->line[slot];
      if (theirs.sig[0] != words[0] || theirs.sig[1] != words[1]) {
        const uint64_t got[2] = {theirs.sig[0], theirs.sig[1]};
        const Signature other = unpackSignature(got);
        return fail(c, makeError(collArgMismatch,
                                 "rank {}: ranks called with different arguments: {} (rank {} called {}; rank {} called "
                                 "{})",
                                 me, compareSignatures(unpackSignature(words), me, other, q), q, describe(other), me,
                                 describe(unpackSignature(words))));
      }
    }
  }
  auto payload = [&](int q) -> const unsigned char* { return boards[q]->line[slot].payload; };
  if (reduces && (c.kind == CollKind::AllReduce || me == c.root)) {
    // Rank order, post-op last: ((l0 op l1) op l2) ...; the recvbuff may be
    // the sendbuff, which nobody reads any more.
    alignas(16) unsigned char acc[transport::kBoardPayload];
    kernels::ReduceFn plain = c.fn;
    plain.premul = false;
    if (n == 1) {
      kernels::reduce(plain, acc, nullptr, payload(0), c.count, false, true);
    } else {
      for (int q = 1; q < n; ++q)
        kernels::reduce(plain, acc, q == 1 ? payload(0) : acc, payload(q), c.count, false, q == n - 1);
    }
    std::memcpy(c.recv, acc, bytes);
  } else if (c.kind == CollKind::AllGather) {
    // Every part from its line (this rank's too: in place, sendbuff is
    // recvbuff's own part, and copying the line back rewrites the same bytes).
    for (int q = 0; q < n; ++q) std::memcpy(static_cast<unsigned char*>(c.recv) + q * bytes, payload(q), bytes);
  } else if (c.kind == CollKind::Broadcast && me != c.root) {
    std::memcpy(c.recv, payload(c.root), bytes);
  } else if (c.kind == CollKind::Broadcast && c.send != c.recv) {
    std::memcpy(c.recv, c.send, bytes);  // the root, out of place
  }

  // 4. Done with op j: its lines may be rewritten at op j+K.
  boards[me]->done.store(j, std::memory_order_release);
  return Status::ok();
}

Status boardPathMismatch(const CommView& comm, const Signature& sig) {
  using sched::CollKind;
  if (comm.boards == nullptr || comm.boardOps == nullptr || sig.coll == CollKind::Send || sig.coll == CollKind::Recv)
    return Status::ok();
  const uint64_t next = *comm.boardOps + 1;
  Signature mine = sig;
  mine.seq &= (uint64_t{1} << 23) - 1;  // what a packed signature keeps
  mine.algo = Signature{}.algo;         // not packed
  for (int q = 0; q < comm.nranks; ++q) {
    if (q == comm.rank) continue;
    const transport::BoardLine& line = comm.boards[q]->line[next % transport::kBoardLines];
    if (line.op.load(std::memory_order_acquire) != next) continue;
    const uint64_t words[2] = {line.sig[0], line.sig[1]};
    const Signature theirs = unpackSignature(words);
    if (theirs.seq != mine.seq) continue;  // a later call of theirs (this one's part done)
    const std::string diff = compareSignatures(mine, comm.rank, theirs, q);
    if (!diff.empty())
      return makeError(collArgMismatch,
                       "rank {}: ranks called with different arguments: {} (rank {} called {} and took the board; rank "
                       "{} called {})",
                       comm.rank, diff, q, describe(theirs), comm.rank, describe(mine));
    return makeError(collInvalidUsage,
                     "rank {}: rank {} made call {} outside a collGroupStart/End, rank {} inside one (ranks must agree)",
                     comm.rank, q, describe(theirs), comm.rank);
  }
  return Status::ok();
}

}  // namespace coll::exec
