#include "shm_transport.h"

#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>

#include "coll/base/log.h"

namespace coll::shm {
namespace {

// What each rank publishes in the bootstrap round.
struct Published {
  char name[96];
  uint64_t bytes;
  int32_t pid;
};

SegmentHeader* headerOf(const Segment& s) { return reinterpret_cast<SegmentHeader*>(s.data()); }

// Gone, or dead and not yet reaped by its parent (a zombie still answers
// kill(pid, 0), and a slow launcher may take seconds to reap it).
bool processGone(int pid) {
  if (kill(pid, 0) != 0) return errno == ESRCH;
  char path[64];
  snprintf(path, sizeof(path), "/proc/%d/stat", pid);
  FILE* f = fopen(path, "re");
  if (f == nullptr) return false;  // no /proc: trust kill()
  char buf[512];
  size_t n = fread(buf, 1, sizeof(buf) - 1, f);
  fclose(f);
  buf[n] = '\0';
  // "pid (comm) S ...": the state follows the last ')' (comm may hold one).
  const char* close = strrchr(buf, ')');
  return close != nullptr && close[1] == ' ' && (close[2] == 'Z' || close[2] == 'X');
}

}  // namespace

ShmTransport::~ShmTransport() = default;

transport::LinkCost ShmTransport::cost() const {
  // Alpha: a hop is a few cache-line transfers to a receiver spinning on
  // its own core; beta: a copy through a cache-resident slot; no
  // per-message overhead, since a message is a slot copy and a flag; the
  // handoff: where ranks share cores the receiver is descheduled instead.
  // The measurements behind the values: docs/PERFORMANCE.md, "Stated link
  // costs".
  return {0.4e-6, 1.0 / 10e9, 0, 1.5e-6};
}

size_t ShmTransport::fifoOffset(int channel, int senderIndex) const {
  size_t npeers = peers_.size();
  return kHeaderBytes + (channel * npeers + senderIndex) * fifoBytes(opt_.nslots, opt_.slotBytes);
}

Status ShmTransport::connect(transport::Exchange& ex, int rank, const std::vector<transport::PeerInfo>& all,
                             const std::vector<int>& peers, const transport::ConnectOptions& opt) {
  if (opt.nslots < 1 || opt.nslots > kMaxSlots)
    return makeError(collInvalidArgument, "shm: nslots={} must be in [1, {}]", opt.nslots, kMaxSlots);
  if (opt.slotBytes < 2 * transport::kSlotHeaderBytes || opt.slotBytes % 64 != 0)
    return makeError(collInvalidArgument, "shm: slot size {} must be a multiple of 64 and >= 128", opt.slotBytes);
  rank_ = rank;
  nranks_ = static_cast<int>(all.size());
  opt_ = opt;
  // The peer set is a clique (every local rank talks to every other), so a
  // receiver's FIFO for sender s sits at s's position among the others.
  std::vector<int> sorted = peers;
  std::sort(sorted.begin(), sorted.end());
  peerIndex_.assign(nranks_, -1);
  for (size_t i = 0; i < sorted.size(); ++i) {
    peers_.push_back(Peer{sorted[i], all[sorted[i]].pid, Segment{}});
    peerIndex_[sorted[i]] = static_cast<int>(i);
  }
  size_t npeers = peers_.size();
  size_t bytes = kHeaderBytes + opt.nchannels * npeers * fifoBytes(opt.nslots, opt.slotBytes);

  Published mine{};
  std::string name = fmt::format("/coll-{}-{}-r{}", opt.jobTag, getpid(), rank);
  if (name.size() >= sizeof(mine.name)) name.resize(sizeof(mine.name) - 1);
  auto seg = Segment::create(name, bytes);
  if (!seg.isOk()) {
    // Still take part in the exchange so peers fail cleanly instead of waiting.
    mine.bytes = 0;
    std::vector<char> ignored;
    (void)ex.allGather(&mine, sizeof(mine), ignored);
    return seg.status();
  }
  own_ = seg.take();
  auto* hdr = headerOf(own_);
  hdr->magic = kSegmentMagic;
  hdr->ownerRank = rank;
  hdr->ownerPid = getpid();
  hdr->failedRankPlus1.store(0, std::memory_order_relaxed);
  hdr->doorbell.store(0, std::memory_order_relaxed);
  hdr->sleeping.store(0, std::memory_order_relaxed);
  snprintf(mine.name, sizeof(mine.name), "%s", name.c_str());
  mine.bytes = bytes;
  mine.pid = getpid();

  std::vector<char> table;
  COLL_CHECK(ex.allGather(&mine, sizeof(mine), table));
  const auto* pub = reinterpret_cast<const Published*>(table.data());
  Status failure;
  for (auto& p : peers_) {
    const Published& theirs = pub[p.rank];
    if (theirs.bytes == 0) {
      failure = makeError(collRemoteError, "shm: rank {} could not create its shared memory segment", p.rank);
      break;
    }
    auto s = Segment::attach(theirs.name, theirs.bytes);
    if (!s.isOk()) {
      failure = s.status();
      break;
    }
    p.segment = s.take();
    if (headerOf(p.segment)->magic != kSegmentMagic) {
      failure = makeError(collSystemError, "shm: segment '{}' of rank {} has a bad magic", theirs.name, p.rank);
      break;
    }
  }
  // Everyone has attached (or failed) before anyone removes its name.
  Status barrier = ex.barrier();
  own_.unlink();
  COLL_CHECK(failure);
  COLL_CHECK(barrier);

  send_.resize(opt.nchannels * npeers);
  recv_.resize(opt.nchannels * npeers);
  for (int c = 0; c < opt.nchannels; ++c) {
    for (size_t i = 0; i < npeers; ++i) {
      const Peer& p = peers_[i];
      // Our index among the receiver's peers: ranks below us keep their
      // position, we sit where our rank falls in their sorted list.
      std::vector<int> theirPeers = sorted;
      theirPeers.push_back(rank);
      theirPeers.erase(std::find(theirPeers.begin(), theirPeers.end(), p.rank));
      std::sort(theirPeers.begin(), theirPeers.end());
      int meInTheirs = static_cast<int>(std::find(theirPeers.begin(), theirPeers.end(), rank) - theirPeers.begin());
      if (c == 0) meInTheirs_.push_back(meInTheirs);
      send_[c * npeers + i] = std::make_unique<ShmSendConn>(p.segment.data() + fifoOffset(c, meInTheirs),
                                                            opt.nslots, opt.slotBytes, headerOf(p.segment));
      recv_[c * npeers + i] = std::make_unique<ShmRecvConn>(own_.data() + fifoOffset(c, static_cast<int>(i)),
                                                            opt.nslots, opt.slotBytes, headerOf(p.segment));
    }
  }
  COLL_LOG(Info, kShm, rank, "shm connected to {} peers, {} channels x {} slots x {} KiB, segment {} KiB",
           npeers, opt.nchannels, opt.nslots, opt.slotBytes >> 10, bytes >> 10);
  return Status::ok();
}

transport::SendConn* ShmTransport::sendConn(int channel, int peer) {
  int i = peer >= 0 && peer < nranks_ ? peerIndex_[peer] : -1;
  if (i < 0 || channel < 0 || channel >= opt_.nchannels) return nullptr;
  return send_[channel * peers_.size() + i].get();
}

transport::RecvConn* ShmTransport::recvConn(int channel, int peer) {
  int i = peer >= 0 && peer < nranks_ ? peerIndex_[peer] : -1;
  if (i < 0 || channel < 0 || channel >= opt_.nchannels) return nullptr;
  return recv_[channel * peers_.size() + i].get();
}

Status ShmTransport::checkPeers() {
  if (own_.data() == nullptr) return Status::ok();
  auto* hdr = headerOf(own_);
  int failed = hdr->failedRankPlus1.load(std::memory_order_acquire);
  if (failed == -1) return Status::ok();  // a message is being written: next check
  if (failed != 0)
    return makeError(collRemoteError, "rank {} failed: {}", failed - 1,
                     std::string(hdr->failure, strnlen(hdr->failure, sizeof(hdr->failure))));
  return Status::ok();
}

transport::Board* ShmTransport::board(int rank) {
  if (own_.data() == nullptr || static_cast<int>(peers_.size()) != nranks_ - 1 || rank < 0 || rank >= nranks_)
    return nullptr;
  if (rank == rank_) return &headerOf(own_)->board;
  const int i = peerIndex_[rank];
  return i < 0 ? nullptr : &headerOf(peers_[i].segment)->board;
}

const std::vector<int>& ShmTransport::deadPeers() {
  // A process that died without telling anyone: look it up, at most every
  // 50 ms (kill(pid, 0) is a system call).
  int64_t t = nowNs();
  if (t - lastPidCheckNs_ < 50'000'000) return dead_;
  lastPidCheckNs_ = t;
  dead_.clear();
  for (const auto& p : peers_)
    if (p.pid > 0 && processGone(p.pid)) dead_.push_back(p.rank);
  return dead_;
}

uint32_t ShmTransport::prepareToSleep() { return shm::prepareToSleep(headerOf(own_)); }

void ShmTransport::sleep(uint32_t seen, int64_t maxNs) { sleepOnDoorbell(headerOf(own_), seen, maxNs); }

void ShmTransport::cancelSleep() { shm::cancelSleep(headerOf(own_)); }

void ShmTransport::wake() {
  if (own_.data() == nullptr) return;
  wakeOwner(headerOf(own_));
}

void ShmTransport::reportWait(int waitingFor) {
  for (size_t i = 0; i < peers_.size() && i < meInTheirs_.size(); ++i) {
    if (peers_[i].segment.data() == nullptr || meInTheirs_[i] >= kMaxWaitReporters) continue;
    auto* hdr = headerOf(peers_[i].segment);
    hdr->waitPlus2[meInTheirs_[i]].store(waitingFor + 2, std::memory_order_release);
    wakeOwner(hdr);
  }
}

void ShmTransport::waitReports(std::vector<int>& byRank) {
  if (own_.data() == nullptr) return;
  auto* hdr = headerOf(own_);
  for (size_t i = 0; i < peers_.size() && i < static_cast<size_t>(kMaxWaitReporters); ++i) {
    int v = hdr->waitPlus2[i].load(std::memory_order_acquire);
    if (v != 0) byRank[peers_[i].rank] = v - 2;
  }
}

void ShmTransport::notifyPeers(const std::string& why) {
  for (auto& p : peers_) {
    if (p.segment.data() == nullptr) continue;
    auto* hdr = headerOf(p.segment);
    int expected = 0;
    // First failure wins: claim the flag (-1), write the message, then
    // publish our rank.  A reader that sees -1 knows a failure is coming.
    if (hdr->failedRankPlus1.compare_exchange_strong(expected, -1, std::memory_order_acq_rel)) {
      snprintf(hdr->failure, sizeof(hdr->failure), "%s", why.c_str());
      hdr->failedRankPlus1.store(rank_ + 1, std::memory_order_release);
      wakeOwner(hdr);
    }
  }
}

}  // namespace coll::shm
