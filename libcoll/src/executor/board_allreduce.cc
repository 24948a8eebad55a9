// board_allreduce.cc — see board_allreduce.h.
#include "executor/board_allreduce.h"

#include <fmt/format.h>
#include <sched.h>

#include <algorithm>
#include <cstring>
#include <string>

#include "util/clock.h"

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
// here; larger communicators wait for peers one by one).
class PeerSet {
 public:
  template <class Ready>
  void refresh(int n, int me, Ready ready) {
    if (n <= 64) {
      for (uint64_t left = bits_; left != 0; left &= left - 1)
        if (ready(__builtin_ctzll(left))) bits_ &= ~(uint64_t{1} << __builtin_ctzll(left));
      return;
    }
    while (next_ < n && (next_ == me || ready(next_))) ++next_;
  }
  void fill(int n, int me) {
    bits_ = 0;
    next_ = 0;
    if (n <= 64)
      for (int q = 0; q < n; ++q)
        if (q != me) bits_ |= uint64_t{1} << q;
    big_ = n > 64;
  }
  bool empty(int n) const { return big_ ? next_ >= n : bits_ == 0; }
  int lowest() const { return big_ ? next_ : __builtin_ctzll(bits_); }
  bool has(int q) const { return big_ ? q >= next_ : ((bits_ >> q) & 1) != 0; }

 private:
  uint64_t bits_ = 0;
  int next_ = 0;
  bool big_ = false;
};

// A bounded wait until ready(q) holds for every peer q.  All pending peers
// are polled each round, so a rank never yields for one peer while another
// is ready to be read: which peer publishes first depends on how the
// scheduler placed the ranks on cores.  Spins comm.spinBudget rounds, then
// yields; every yield checks abort, failed and dead peers, and the deadline.
// `what` names the wait in errors.
template <class Ready>
Status waitAll(const BoardCall& c, const char* what, Ready ready) {
  const CommView& comm = *c.comm;
  const int n = comm.nranks;
  PeerSet pending;
  pending.fill(n, comm.rank);
  pending.refresh(n, comm.rank, ready);
  if (pending.empty(n)) return Status::ok();
  int64_t start = 0;  // read at the first yield: the spins take microseconds
  for (uint32_t i = 0;; ++i) {
    pending.refresh(n, comm.rank, ready);
    if (pending.empty(n)) return Status::ok();
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
    if (!s.isOk()) return makeError(s.code(), "rank {}: {} while {} ({})", comm.rank, s.message(), what, describe(c.sig));
    pending.refresh(n, comm.rank, ready);
    if (pending.empty(n)) return Status::ok();
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

Status boardAllReduce(const BoardCall& c) {
  const CommView& comm = *c.comm;
  const int n = comm.nranks, me = comm.rank;
  const uint64_t j = c.op;
  const int parity = static_cast<int>(j & 1);
  Board* const* boards = comm.boards;

  // 1. Every peer finished op j-2, whose line we are about to rewrite.
  if (j > 2) {
    Status s = waitAll(c, "waiting for the previous board op of", [&](int q) {
      const Board* b = boards[q];
      return b->line[parity ^ 1].op.load(std::memory_order_acquire) >= j - 1 ||
             b->done.load(std::memory_order_acquire) >= j - 2;
    });
    if (!s.isOk()) return fail(c, s);
  }

  // 2. Publish pre(input), the signature and the op number.
  transport::BoardLine& mine = boards[me]->line[parity];
  const size_t bytes = c.count * c.elemSize;
  if (c.fn.premul) kernels::reduce(c.fn, mine.payload, nullptr, c.send, c.count, true, false);
  else std::memcpy(mine.payload, c.send, bytes);
  uint64_t words[2] = {0, 0};
  (void)packSignature(c.sig, words);
  mine.sig[0] = words[0];
  mine.sig[1] = words[1];
  mine.op.store(j, std::memory_order_release);

  // 3. Every rank's line of op j; the calls must match.
  Status arrived = waitAll(c, "waiting for", [&](int q) {
    return boards[q]->line[parity].op.load(std::memory_order_acquire) >= j;
  });
  if (!arrived.isOk()) return fail(c, arrived);
  for (int q = 0; q < n; ++q) {
    if (q == me) continue;
    const transport::BoardLine& theirs = boards[q]->line[parity];
    if (theirs.sig[0] != words[0] || theirs.sig[1] != words[1]) {
      const uint64_t got[2] = {theirs.sig[0], theirs.sig[1]};
      const Signature other = unpackSignature(got);
      return fail(c, makeError(collArgMismatch,
                               "rank {}: ranks called with different arguments: {} (rank {} called {}; rank {} called {})",
                               me, compareSignatures(unpackSignature(words), me, other, q), q, describe(other), me,
                               describe(unpackSignature(words))));
    }
  }
  // Rank order, post-op last: ((l0 op l1) op l2) ...; the recvbuff may be
  // the sendbuff, which nobody reads any more.
  alignas(16) unsigned char acc[transport::kBoardPayload];
  kernels::ReduceFn plain = c.fn;
  plain.premul = false;
  const void* first = boards[0]->line[parity].payload;
  if (n == 1) {
    kernels::reduce(plain, acc, nullptr, first, c.count, false, true);
  } else {
    for (int q = 1; q < n; ++q)
      kernels::reduce(plain, acc, q == 1 ? first : acc, boards[q]->line[parity].payload, c.count, false, q == n - 1);
  }
  std::memcpy(c.recv, acc, bytes);

  // 4. Done with op j: its lines may be rewritten at op j+2.
  boards[me]->done.store(j, std::memory_order_release);
  return Status::ok();
}

}  // namespace coll::exec
