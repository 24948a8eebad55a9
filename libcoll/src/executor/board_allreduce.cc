// board_allreduce.cc — see board_allreduce.h.
#include "executor/board_allreduce.h"

#include <fmt/format.h>
#include <sched.h>

#include <algorithm>
#include <cstring>

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

// A bounded wait for `ready()` on peer `peer`: spins comm.spinBudget times,
// then yields; every yield checks abort, failed and dead peers, and the
// deadline.  `what` names the wait in errors.
template <class Ready>
Status waitFor(const BoardCall& c, int peer, const char* what, Ready ready) {
  const CommView& comm = *c.comm;
  if (ready()) return Status::ok();
  const int64_t start = nowNs();
  for (uint32_t i = 0;; ++i) {
    if (ready()) return Status::ok();
    if (i < comm.spinBudget) {
      COLL_BOARD_RELAX();
      continue;
    }
    sched_yield();
    if (comm.aborted != nullptr && comm.aborted->load(std::memory_order_relaxed))
      return makeError(collAborted, "rank {}: communicator aborted (collCommAbort)", comm.rank);
    if ((i & 15) != 0) continue;
    Status s = comm.transport->checkPeers();
    if (!s.isOk()) return makeError(s.code(), "rank {}: {} while {} ({})", comm.rank, s.message(), what, describe(c.sig));
    const auto& dead = comm.transport->deadPeers();
    if (std::find(dead.begin(), dead.end(), peer) != dead.end() && !ready()) {
      Status notice = comm.transport->checkPeers();
      if (!notice.isOk()) return makeError(notice.code(), "rank {}: {}", comm.rank, notice.message());
      return makeError(collRemoteError, "rank {}: rank {} died (its process is gone) while {} ({})", comm.rank, peer,
                       what, describe(c.sig));
    }
    const int64_t idleMs = (nowNs() - start) / 1000000;
    if (comm.timeoutMs > 0 && idleMs >= comm.timeoutMs)
      return makeError(collTimeout, "rank {} timed out after {} ms without progress (COLL_TIMEOUT), {} rank {} in {}; "
                       "stuck: rank(s) {}", comm.rank, idleMs, what, peer, describe(c.sig), peer);
  }
}

Status fail(const BoardCall& c, Status s) {
  c.comm->transport->notifyPeers(s.message());
  return s;
}

}  // namespace

bool boardAvailable(const CommView& comm) {
  if (comm.nranks < 2 || comm.transport == nullptr) return false;
  // Every rank must reach every rank's board (the same answer on all ranks).
  for (int r = 0; r < comm.nranks; ++r)
    if (comm.transport->board(r) == nullptr) return false;
  return true;
}

Status boardAllReduce(const BoardCall& c) {
  const CommView& comm = *c.comm;
  const int n = comm.nranks, me = comm.rank;
  const uint64_t j = c.op;
  const int parity = static_cast<int>(j & 1);
  transport::Transport* t = comm.transport;

  // 1. Every peer finished op j-2, whose line we are about to rewrite.
  if (j > 2)
    for (int q = 0; q < n; ++q) {
      if (q == me) continue;
      Board* b = t->board(q);
      Status s = waitFor(c, q, "waiting for the previous board op of", [&] {
        return b->line[parity ^ 1].op.load(std::memory_order_acquire) >= j - 1 ||
               b->done.load(std::memory_order_acquire) >= j - 2;
      });
      if (!s.isOk()) return fail(c, s);
    }

  // 2. Publish pre(input), the signature and the op number.
  transport::BoardLine& mine = t->board(me)->line[parity];
  const size_t bytes = c.count * c.elemSize;
  if (c.fn.premul) kernels::reduce(c.fn, mine.payload, nullptr, c.send, c.count, true, false);
  else std::memcpy(mine.payload, c.send, bytes);
  uint64_t words[2] = {0, 0};
  (void)packSignature(c.sig, words);
  mine.sig[0] = words[0];
  mine.sig[1] = words[1];
  mine.op.store(j, std::memory_order_release);

  // 3. Every rank's line of op j; the calls must match.
  for (int q = 0; q < n; ++q) {
    if (q == me) continue;
    transport::BoardLine& theirs = t->board(q)->line[parity];
    Status s = waitFor(c, q, "waiting for", [&] { return theirs.op.load(std::memory_order_acquire) >= j; });
    if (!s.isOk()) return fail(c, s);
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
  const void* first = t->board(0)->line[parity].payload;
  if (n == 1) {
    kernels::reduce(plain, acc, nullptr, first, c.count, false, true);
  } else {
    for (int q = 1; q < n; ++q)
      kernels::reduce(plain, acc, q == 1 ? first : acc, t->board(q)->line[parity].payload, c.count, false, q == n - 1);
  }
  std::memcpy(c.recv, acc, bytes);

  // 4. Done with op j: its lines may be rewritten at op j+2.
  t->board(me)->done.store(j, std::memory_order_release);
  return Status::ok();
}

}  // namespace coll::exec
