// transport.h — the one interface every transport implements.
//
// A transport moves messages between two ranks through bounded FIFOs of
// slots, one FIFO per (channel, sender -> receiver).  Everything here is
// nonblocking: tryAcquire/tryPeek return nullptr when the FIFO is full/empty
// and the executor polls; no call waits.  Each slot starts with a
// kSlotHeaderBytes area the executor owns (it carries the collective's
// signature), followed by the payload; slots are 64-byte aligned.
//
// Ownership: the transport owns its FIFOs and connections; the executor
// borrows SendConn/RecvConn pointers for the communicator's lifetime.
#pragma once

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "coll/base/clock.h"
#include "coll/base/status.h"

namespace coll::transport {

constexpr size_t kSlotHeaderBytes = 64;

// What a link costs, stated by the transport, used by the tuner and the perf
// tools alike: alpha seconds per message, beta seconds per byte, and
// overhead seconds of a rank's own time per message it sends or receives
// beyond the one send and one receive a hop already prices (what one-shot
// algorithms pay for talking to N-1 peers in one hop: system calls and
// wake-ups on sockets, next to nothing on shared memory).
struct LinkCost {
  double alpha;
  double beta;
  double overhead = 0;
  // Seconds a hop costs beyond alpha where ranks outnumber the CPUs they
  // share (the tuner adds it only then): the wake-up of a descheduled
  // receiver, if alpha does not price one already.
  double handoff = 0;
};

class SendConn {
 public:
  virtual ~SendConn() = default;
  // A free slot of slotBytes() bytes (header included), or nullptr if full.
  virtual void* tryAcquire() = 0;
  // Publishes the acquired slot; `bytes` counts header + payload.
  virtual void post(size_t bytes) = 0;
  virtual size_t slotBytes() const = 0;
  // Zero-copy sending, where the transport copies the bytes again anyway
  // (sockets: into the kernel): postExternal publishes the acquired slot
  // with its first headerBytes written and its payload left at `data`
  // (dataBytes, headerBytes + dataBytes <= slotBytes()), read when the
  // message leaves.  The caller keeps `data` unchanged until sendsInFlight()
  // is false or it called Transport::settleSends().  Only where
  // sendsExternal() says so.
  virtual bool sendsExternal() const { return false; }
  virtual void postExternal(size_t headerBytes, const void* data, size_t dataBytes) {
    (void)headerBytes;
    (void)data;
    (void)dataBytes;
  }
};

class RecvConn {
 public:
  virtual ~RecvConn() = default;
  // The oldest unread message (header first) and its size, or nullptr.
  virtual const void* tryPeek(size_t* bytes) = 0;
  // Frees the slot returned by the last tryPeek.
  virtual void release() = 0;
};

// How ranks exchange setup data (the bootstrap implements it).
class Exchange {
 public:
  virtual ~Exchange() = default;
  // Every rank contributes `bytes` bytes; out gets nranks*bytes, rank order.
  virtual Status allGather(const void* mine, size_t bytes, std::vector<char>& out) = 0;
  virtual Status barrier() = 0;
};

// Facts about every rank known after the first bootstrap round.
struct PeerInfo {
  int rank;
  int pid;
  uint64_t hostHash;      // hostname + boot id: equal means same machine
  // Per setting every rank must share (core/comm.cc, agreedSettings), a
  // hash of its value in force; slots past the settings' count are 0.
  static constexpr int kMaxAgreed = 24;
  uint32_t agreed[kMaxAgreed];
  int32_t numaNode;       // the NUMA node holding the rank's CPUs (libcoll/src/topo), -1: none or not known
  uint64_t cpuHash;       // boot id: equal means the same kernel and CPUs
};

struct ConnectOptions {
  int nchannels = 2;
  int nslots = 4;
  size_t slotBytes = 256 << 10;
  std::string jobTag;  // unique per job, safe in file names
  std::array<uint8_t, 32> secret{};  // the job secret: connections prove they know it
  int64_t timeoutMs = 300'000;       // setup deadline (COLL_TIMEOUT)
};

// The small-message board (transports that share memory between all ranks):
// per rank, kBoardLines lines used in turn by board op number, each holding
// the op number, the call's packed signature and up to kBoardPayload bytes,
// plus the number of the last board op the rank finished.  The owner writes
// its lines; peers read them (executor/board_collectives.h says how).  Lines
// in turn, not two: ranks that return without waiting for every peer (a
// broadcast's root, a reduce's non-roots) may run that many calls ahead.
constexpr size_t kBoardPayload = 256;
constexpr uint64_t kBoardLines = 16;
struct alignas(64) BoardLine {
  std::atomic<uint64_t> op;  // board op number held (0: none yet)
  uint64_t sig[2];
  alignas(16) unsigned char payload[kBoardPayload];
};
struct Board {
  BoardLine line[kBoardLines];
  alignas(64) std::atomic<uint64_t> done;  // last board op this rank finished
};

class Transport {
 public:
  virtual ~Transport() = default;
  virtual const char* name() const = 0;
  virtual LinkCost cost() const = 0;
  // Collective over `ex`: connect `rank` to every peer in `peers` (a subset
  // of all ranks; every listed peer lists us too) on opt.nchannels channels.
  virtual Status connect(Exchange& ex, int rank, const std::vector<PeerInfo>& all,
                         const std::vector<int>& peers, const ConnectOptions& opt) = 0;
  virtual SendConn* sendConn(int channel, int peer) = 0;
  virtual RecvConn* recvConn(int channel, int peer) = 0;
  // Cheap check run by waits' slow path: an error naming the peer if one
  // reported a failure (it failed; we must stop too).
  virtual Status checkPeers() = 0;
  // Peers whose process is gone (checked at most every few tens of ms).  A
  // dead peer is not by itself an error: it may have finished its part and
  // exited.  The executor fails only if it still waits on one of them.
  virtual const std::vector<int>& deadPeers() = 0;
  // True while posted messages still sit in this rank's memory, not yet
  // with the peer or its kernel.  A collective is not finished before they
  // left: the process may exit right after it returns.
  virtual bool sendsInFlight() = 0;
  // Copies into their slots the payloads of posted messages that still sit
  // in caller memory (SendConn::postExternal), so the caller may reuse it
  // while they wait to leave (a peer that stopped reading, a failed call).
  // The executor calls it before every collective returns.
  virtual void settleSends() {}
  // Timeout diagnosis: tell every peer which rank we wait for (-1: none
  // known), and read what peers told us: byRank[r] is r's report, or
  // kNoWaitReport.  Every rank that times out reports, so the rank waited
  // on that reported nothing is the stuck one, found from any rank's log.
  static constexpr int kNoWaitReport = -2;
  virtual void reportWait(int waitingFor) = 0;
  virtual void waitReports(std::vector<int>& byRank) = 0;
  // Tells every connected peer that this rank failed (they stop waiting).
  virtual void notifyPeers(const std::string& why) = 0;

  // Sleeping until a peer gives us work (a message, or room in a full
  // queue).  prepareToSleep announces it and returns a token; the caller
  // then polls every connection once more and either calls sleep(token),
  // which returns on a wake-up or after maxNs, or cancelSleep().  Posting
  // and releasing on a connection wake a sleeping peer.  wake() rings our
  // own bell (collCommAbort uses it).
  virtual uint32_t prepareToSleep() = 0;
  virtual void sleep(uint32_t token, int64_t maxNs) = 0;
  virtual void cancelSleep() = 0;
  virtual void wake() = 0;
  // Rank r's board, or nullptr when this transport has none for r (only
  // shared memory with every rank has one).
  virtual Board* board(int /*rank*/) { return nullptr; }

  // Memory the user registered (NCCL's ncclCommRegister) and promises to
  // keep allocated until it deregisters it: a transport whose sends can
  // leave straight from registered memory (IB: the NIC reads it) registers
  // it; the others have nothing to do.  Registering twice counts twice.
  virtual Status registerBuffer(const void* /*p*/, size_t /*bytes*/) { return Status::ok(); }
  virtual void deregisterBuffer(const void* /*p*/) {}
};

}  // namespace coll::transport
