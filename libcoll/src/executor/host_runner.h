// host_runner.h — the host executor's Runner (internal to coll::executor):
// the state of one call's (or group's) streams and links.  host_executor.cc
// drives the streams; host_runner_diagnostics.cc answers "why are we stuck"
// (slow checks, timeout reports, wait graphs).
#pragma once

#include <cstring>
#include <string>
#include <vector>

#include "executor/host_executor.h"

namespace coll::exec::detail {

using sched::Buf;
using sched::Step;
using sched::StepKind;
using transport::kSlotHeaderBytes;

// Sends of at least this many payload bytes leave from the caller's buffer
// where the transport allows it (SendConn::postExternal); below it the copy
// into the slot is cheap and the frame leaves in one piece.
constexpr size_t kExternalSendBytes = 32 << 10;

// Where a stream stands.  checkPhase: 0 send signature, 1 receive it, 2 done.
struct Stream {
  uint32_t op;
  uint32_t channel;
  uint32_t next = 0;
  uint32_t nsteps;
  int checkPhase = 2;
};

enum class Try { Done, NotReady, Failed };

// Reused per thread: a call allocates nothing once the vectors have grown
// (small-message latency is a few hundred nanoseconds; malloc would show).
class Runner {
 public:
  Status run(std::vector<HostOp>& ops);

 private:
  Try tryStep(Stream& st, const Step& s);
  Try tryCheck(Stream& st);
  Status verify(const HostOp& op, const MsgHeader& h, int from, size_t bytes, const Step* s, uint32_t index);
  Status slowChecks(int64_t now);
  Status timeoutError(int64_t idleMs, int64_t timeoutMs);
  int waitedPeer(const Stream& st) const;
  std::string waitGraph(const CommView* c, int waitingFor, int64_t timeoutMs);
  std::string where(const Stream& st) const;
  bool blockedOn(const Stream& st, int peer) const;
  // Tells each recorded op's flight recorder entry where it waits.
  void recordWaits();

  // Group ordering of links.
  size_t linkId(uint32_t op, uint32_t ch, int peer, int dir) const;
  bool owns(uint32_t op, uint32_t ch, int peer, int dir) const;
  void consumed(uint32_t op, uint32_t ch, int peer, int dir);
  void setupLinks();

  const char* srcPtr(const HostOp& op, const Step& s) const {
    const char* base = s.src == Buf::Input ? op.input : s.src == Buf::Output ? op.output : op.scratch;
    return base + s.srcOff * op.elemSize;
  }
  char* dstPtr(const HostOp& op, const Step& s) const {
    return (s.dst == Buf::Scratch ? op.scratch : op.output) + s.dstOff * op.elemSize;
  }
  // Gives every op whose schedule asks for it its part of scratch_.
  void placeScratch();
  // a op pre(b) -> dst, or plain copy for non-reducing collectives.
  void combine(const HostOp& op, const Step& s, void* dst, const void* a, const void* b, size_t n) const {
    if (op.reduces) {
      const bool pre = s.src == Buf::Input && op.fn.premul;
      const bool post = s.final && op.fn.divisor > 1;
      // One rank, in place: without a scalar or a divisor other than 1 the
      // pass would rewrite every element with itself (a 23 MB gradient
      // all-reduce at N = 1 spent 0.9 ms doing that).
      if (a == nullptr && dst == b && !pre && !post) return;
      kernels::reduce(op.fn, dst, a, b, n, pre, s.final);
    } else if (dst != b) {
      memcpy(dst, b, n * op.elemSize);
    }
  }

  std::vector<char> scratch_;  // grows, never shrinks: calls after the first allocate nothing
  std::vector<HostOp>* opsPtr_ = nullptr;
  std::vector<HostOp>& ops_() const { return *opsPtr_; }
  std::vector<Stream> streams_;
  Status failure_;
  // Links: comm index base + ((ch * nranks + peer) * 2 + dir).
  std::vector<const CommView*> comms_;
  std::vector<size_t> commBase_;
  std::vector<uint32_t> opComm_;
  size_t nlinks_ = 0;
  std::vector<uint32_t> pending_;  // [op * nlinks + link]
  std::vector<uint32_t> owner_;    // [link] first op still using it
  bool grouped_ = false;
};

}  // namespace coll::exec::detail
