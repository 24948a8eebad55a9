#include "socket_transport.h"

#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <map>
#include <tuple>

#include "coll/base/hello_gate.h"
#include "coll/base/log.h"

namespace coll::sock {
namespace {


ConnHello makeHello(const transport::ConnectOptions& opt, int from, int to, int channel, int stream) {
  ConnHello h{};
  memcpy(h.secret, opt.secret.data(), kSecretBytes);
  h.magic = kConnMagic;
  h.version = kConnVersion;
  h.fromRank = from;
  h.toRank = to;
  h.channel = channel;
  h.stream = stream;
  h.slotBytes = static_cast<uint32_t>(opt.slotBytes);
  h.nslots = static_cast<uint32_t>(opt.nslots);
  return h;
}

// After setup every data socket is nonblocking and probed when idle, so a
// peer whose host vanished (no FIN ever comes) is noticed too.
void tuneEstablished(int fd) {
  fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
  int one = 1, idle = 5, intvl = 1, cnt = 3;
  setsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &one, sizeof(one));
  setsockopt(fd, IPPROTO_TCP, TCP_KEEPIDLE, &idle, sizeof(idle));
  setsockopt(fd, IPPROTO_TCP, TCP_KEEPINTVL, &intvl, sizeof(intvl));
  setsockopt(fd, IPPROTO_TCP, TCP_KEEPCNT, &cnt, sizeof(cnt));
}

std::string connName(int peer, int channel, int stream) {
  if (channel < 0) return fmt::format("control connection with rank {}", peer);
  return fmt::format("rank {} channel {} stream {}", peer, channel, stream);
}

}  // namespace

SocketTransport::SocketTransport(SocketOptions opt) : sopt_(std::move(opt)) {}

SocketTransport::~SocketTransport() {
  if (wakeFd_ >= 0) ::close(wakeFd_);
}

transport::LinkCost SocketTransport::cost() const {
  // Loopback: a send + recv system call pair and a wake-up per message,
  // bandwidth bounded by the kernel's copies.  A real NIC: an assumed
  // 10 GbE until perf/calibrate measures the link (or a slower port sets
  // beta, tuner/port_cost.h).  Overhead: the system calls and wake-up of
  // each further message a rank handles in one hop.  No handoff: alpha
  // already prices a wake-up of the receiver.  The measurements behind the
  // values: docs/PERFORMANCE.md, "Stated link costs".
  if (sopt_.interface.loopback) return {6e-6, 1.0 / 2.0e9, 3e-6, 0};
  return {15e-6, 1.0 / 1.2e9, 3e-6, 0};
}

Status SocketTransport::connect(transport::Exchange& ex, int rank, const std::vector<transport::PeerInfo>& all,
                                const std::vector<int>& peers, const transport::ConnectOptions& opt) {
  if (opt.nslots < 1 || opt.slotBytes < 2 * transport::kSlotHeaderBytes || opt.slotBytes > (64u << 20))
    return makeError(collInvalidArgument, "socket: bad FIFO geometry ({} slots of {} bytes)", opt.nslots, opt.slotBytes);
  if (sopt_.nstreams < 1 || sopt_.nstreams > kMaxStreams)
    return makeError(collInvalidArgument, "socket: nstreams={} must be in [1, {}]", sopt_.nstreams, kMaxStreams);
  rank_ = rank;
  nranks_ = static_cast<int>(all.size());
  opt_ = opt;
  wakeFd_ = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  if (wakeFd_ < 0) return makeError(collSystemError, "socket: eventfd failed: {}", strerror(errno));
  std::vector<int> sorted = peers;
  std::sort(sorted.begin(), sorted.end());
  peerIndex_.assign(nranks_, -1);
  for (size_t i = 0; i < sorted.size(); ++i) {
    auto p = std::make_unique<Peer>();
    p->link.rank = sorted[i];
    peers_.push_back(std::move(p));
    peerIndex_[sorted[i]] = static_cast<int>(i);
  }
  COLL_CHECK(establish(ex, all, sorted));
  COLL_LOG(Info, kNet, rank, "socket connected to {} peers over {} ({}), {} channels x {} streams, {} slots x {} KiB",
           sorted.size(), sopt_.interface.name, sopt_.interface.address.toString(), opt.nchannels, sopt_.nstreams,
           opt.nslots, opt.slotBytes >> 10);
  return Status::ok();
}

Status SocketTransport::establish(transport::Exchange& ex, const std::vector<transport::PeerInfo>&,
                                  const std::vector<int>& peers) {
  const int nch = opt_.nchannels, ns = sopt_.nstreams;
  Deadline deadline = Deadline::afterMs(opt_.timeoutMs > 0 ? opt_.timeoutMs : 300'000);
  ListenAddress mine{};
  net::Address bindAddr = sopt_.interface.address;
  auto listener = net::Socket::listenOn(bindAddr, sopt_.bufferBytes);
  Status listenStatus = listener.status();
  if (listenStatus.isOk()) {
    auto bound = listener.value().localAddress();
    listenStatus = bound.status();
    if (bound.isOk()) {
      mine.addr = bound.value().storage;
      mine.len = bound.value().len;
      mine.ok = 1;
    }
  }
  std::vector<char> table;
  // Take part even after a failure, so peers fail cleanly instead of waiting.
  COLL_CHECK(ex.allGather(&mine, sizeof(mine), table));
  COLL_CHECK(listenStatus);
  const auto* pub = reinterpret_cast<const ListenAddress*>(table.data());
  for (int p : peers)
    if (pub[p].ok != 1) return makeError(collRemoteError, "socket: rank {} could not listen for connections", p);

  // One table for every connection: [peer index][channel + 1][stream].
  auto slotOf = [&](int peerIdx, int channel, int stream) {
    return (static_cast<size_t>(peerIdx) * (nch + 1) + (channel + 1)) * ns + stream;
  };
  std::vector<net::Socket> conns(peers.size() * (nch + 1) * ns);

  // The lower rank of each pair connects; hellos go out at once, replies
  // are read after our own accepting is done, so no two ranks wait on each
  // other (rank 0 only accepts).
  struct Outgoing {
    int peer, channel, stream;
  };
  std::vector<Outgoing> outgoing;
  for (int p : peers) {
    if (p > rank_) continue;
    net::Address a;
    a.storage = pub[p].addr;
    a.len = pub[p].len;
    for (int ch = -1; ch < nch; ++ch)
      for (int s = 0; s < (ch < 0 ? 1 : ns); ++s) {
        auto sock = net::Socket::connectTo(a, deadline, sopt_.bufferBytes);
        if (!sock.isOk())
          return makeError(sock.status().code(), "socket: rank {} cannot reach rank {} at {}: {}", rank_, p,
                           a.toString(), sock.status().message());
        ConnHello h = makeHello(opt_, rank_, p, ch, s);
        COLL_CHECK(sock.value().sendAll(&h, sizeof(h), deadline));
        conns[slotOf(peerIndex_[p], ch, s)] = sock.take();
        outgoing.push_back({p, ch, s});
      }
  }

  HelloExpect expect{};
  memcpy(expect.secret.data(), opt_.secret.data(), kSecretBytes);
  expect.myRank = rank_;
  expect.nranks = nranks_;
  expect.nchannels = nch;
  expect.nstreams = ns;
  expect.slotBytes = static_cast<uint32_t>(opt_.slotBytes);
  expect.nslots = static_cast<uint32_t>(opt_.nslots);

  size_t expected = 0;
  for (int p : peers)
    if (p > rank_) expected += 1 + static_cast<size_t>(nch) * ns;
  size_t accepted = 0;
  // A stranger gets at most 2 s to prove itself and never delays the real
  // peers beside it (hellos are read in parallel); nothing it sends before
  // the secret matched is used.
  net::HelloGate gate(listener.value(), sizeof(ConnHello), 2000);
  while (accepted < expected) {
    auto conn = gate.next(deadline);
    for (const std::string& why : gate.takeDropped())
      COLL_LOG(Warn, kNet, rank_, "socket: dropped a connection that sent no complete hello: {}", why);
    if (!conn.isOk()) {
      if (conn.status().code() != collTimeout) return conn.status();
      std::string missing;
      for (int p : peers)
        if (p > rank_ && !conns[slotOf(peerIndex_[p], -1, 0)].valid()) missing += fmt::format(" {}", p);
      return makeError(collTimeout, "socket: rank {} timed out after {} ms waiting for connections from rank(s){}",
                       rank_, deadline.timeoutMs(), missing.empty() ? " (data connections missing)" : missing);
    }
    net::HelloGate::Arrival arrival = conn.take();
    net::Socket sock = std::move(arrival.socket);
    ConnHello h{};
    memcpy(&h, arrival.hello.data(), sizeof(h));
    auto key = parseHello(&h, sizeof(h), expect);
    if (!key.isOk()) {
      // A correct secret with different settings is one of our own ranks
      // misconfigured: that is the job's error, not a stranger's.
      if (key.status().code() == collInvalidUsage) return key.status();
      COLL_LOG(Warn, kNet, rank_, "socket: dropped a connection: {}", key.status().message());
      continue;
    }
    const ConnKey k = key.value();
    int idx = peerIndex_[k.fromRank];
    if (idx < 0 || k.fromRank < rank_ || conns[slotOf(idx, k.channel, k.stream)].valid()) {
      COLL_LOG(Warn, kNet, rank_, "socket: dropped an unexpected or duplicate {}", connName(k.fromRank, k.channel, k.stream));
      continue;
    }
    ConnHello reply = makeHello(opt_, rank_, k.fromRank, k.channel, k.stream);
    COLL_CHECK(sock.sendAll(&reply, sizeof(reply), deadline));
    conns[slotOf(idx, k.channel, k.stream)] = std::move(sock);
    ++accepted;
  }
  for (const Outgoing& o : outgoing) {
    net::Socket& sock = conns[slotOf(peerIndex_[o.peer], o.channel, o.stream)];
    ConnHello h{};
    Status got = sock.recvAll(&h, sizeof(h), deadline);
    if (!got.isOk())
      return makeError(got.code(), "socket: no reply on the {}: {}", connName(o.peer, o.channel, o.stream), got.message());
    auto key = parseHello(&h, sizeof(h), expect);
    if (!key.isOk())
      return makeError(collRemoteError, "socket: bad reply on the {}: {}", connName(o.peer, o.channel, o.stream),
                       key.status().message());
    if (key.value().fromRank != o.peer || key.value().channel != o.channel || key.value().stream != o.stream)
      return makeError(collRemoteError, "socket: the {} answered as {}", connName(o.peer, o.channel, o.stream),
                       connName(key.value().fromRank, key.value().channel, key.value().stream));
  }

  // Hand the connections to their FIFOs.
  const size_t npeers = peers.size();
  send_.resize(nch * npeers);
  recv_.resize(nch * npeers);
  for (size_t i = 0; i < npeers; ++i) {
    Peer& p = *peers_[i];
    p.control = std::move(conns[slotOf(static_cast<int>(i), -1, 0)]);
    tuneEstablished(p.control.fd());
    for (int c = 0; c < nch; ++c) {
      std::vector<int> fds;
      for (int s = 0; s < ns; ++s) {
        net::Socket& sock = conns[slotOf(static_cast<int>(i), c, s)];
        tuneEstablished(sock.fd());
        fds.push_back(sock.fd());
        dataSockets_.push_back(std::move(sock));
      }
      send_[c * npeers + i] = std::make_unique<SocketSendConn>(fds, opt_.nslots, opt_.slotBytes, &p.link, &sendSet_);
      recv_[c * npeers + i] = std::make_unique<SocketRecvConn>(fds, opt_.nslots, opt_.slotBytes, &p.link, &sendSet_);
      sendSet_.conns.push_back(send_[c * npeers + i].get());
    }
  }
  return Status::ok();
}

transport::SendConn* SocketTransport::sendConn(int channel, int peer) {
  int i = peer >= 0 && peer < nranks_ ? peerIndex_[peer] : -1;
  if (i < 0 || channel < 0 || channel >= opt_.nchannels) return nullptr;
  return send_[channel * peers_.size() + i].get();
}

transport::RecvConn* SocketTransport::recvConn(int channel, int peer) {
  int i = peer >= 0 && peer < nranks_ ? peerIndex_[peer] : -1;
  if (i < 0 || channel < 0 || channel >= opt_.nchannels) return nullptr;
  return recv_[channel * peers_.size() + i].get();
}

void SocketTransport::readControl(Peer& p) {
  // Read on even when a data connection already broke: the notice of a
  // peer that failed knowingly and exited is still here, and it is the cause.
  if (p.noticed || !p.control.valid() || p.controlClosed) return;
  // Failure notices and wait reports travel here: header, then body.
  for (;;) {
    size_t have = p.notice.size();
    size_t want = sizeof(FrameHeader);
    if (have >= sizeof(FrameHeader)) {
      FrameHeader h;
      memcpy(&h, p.notice.data(), sizeof(h));
      Status ok = checkFrameHeader(h, 0);
      if (!ok.isOk() || h.kind == kData) {
        p.controlClosed = true;
        p.link.markBroken(fmt::format("protocol error on the control connection: {}",
                                      ok.isOk() ? std::string("unexpected data frame") : ok.message()));
        return;
      }
      want = sizeof(FrameHeader) + h.bytes;
      if (have == want) {
        if (h.kind == kWait) {
          int32_t w;
          memcpy(&w, p.notice.data() + sizeof(FrameHeader), sizeof(w));
          p.waitingFor = w;
          p.notice.clear();
          continue;
        }
        p.noticed = true;
        p.noticeText.assign(p.notice.begin() + sizeof(FrameHeader), p.notice.end());
        return;
      }
    }
    char buf[kMaxNoticeBytes + sizeof(FrameHeader)];
    ssize_t n = ::recv(p.control.fd(), buf, want - have, MSG_DONTWAIT);
    if (n == 0) {
      p.controlClosed = true;
      p.link.markBroken("connection closed");
      return;
    }
    if (n < 0) {
      if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) return;
      p.controlClosed = true;
      p.link.markBroken(fmt::format("recv failed: {}", strerror(errno)));
      return;
    }
    p.notice.insert(p.notice.end(), buf, buf + n);
  }
}

void SocketTransport::sendControl(Peer& p, const std::vector<char>& frame) {
  if (p.link.broken || !p.control.valid()) return;
  // Best effort and bounded: the control connection is otherwise idle,
  // so its socket buffer has room unless the peer is gone.
  (void)p.control.sendAll(frame.data(), frame.size(), Deadline::afterMs(200));
}

void SocketTransport::reportWait(int waitingFor) {
  std::vector<char> frame(sizeof(FrameHeader) + sizeof(int32_t));
  FrameHeader h{kWait, sizeof(int32_t)};
  int32_t w = waitingFor;
  memcpy(frame.data(), &h, sizeof(h));
  memcpy(frame.data() + sizeof(h), &w, sizeof(w));
  for (auto& pp : peers_)
    if (!pp->notified) sendControl(*pp, frame);
}

void SocketTransport::waitReports(std::vector<int>& byRank) {
  for (auto& pp : peers_) {
    readControl(*pp);
    if (pp->waitingFor != kNoWaitReport) byRank[pp->link.rank] = pp->waitingFor;
  }
}

Status SocketTransport::checkPeers() {
  for (auto& pp : peers_) {
    Peer& p = *pp;
    readControl(p);
    if (p.noticed) return makeError(collRemoteError, "rank {} failed: {}", p.link.rank, p.noticeText);
    if (p.link.broken && p.link.brokenReason.rfind("protocol error", 0) == 0)
      return makeError(collRemoteError, "rank {} sent bad data: {}", p.link.rank, p.link.brokenReason);
  }
  return Status::ok();
}

const std::vector<int>& SocketTransport::deadPeers() {
  dead_.clear();
  for (auto& pp : peers_) {
    readControl(*pp);
    if (pp->link.broken) dead_.push_back(pp->link.rank);
  }
  return dead_;
}

bool SocketTransport::sendsInFlight() {
  bool any = false;
  for (auto& s : send_) {
    if (!s->hasPending()) continue;
    s->progress();
    // Frames to a peer that is gone can never leave; they do not hold us.
    any = any || (s->hasPending() && !s->peerBroken());
  }
  return any;
}

void SocketTransport::settleSends() {
  for (auto& s : send_)
    if (s->hasPending()) s->settle();
}

void SocketTransport::notifyPeers(const std::string& why) {
  std::string text = why.substr(0, kMaxNoticeBytes);
  std::vector<char> frame(sizeof(FrameHeader) + text.size());
  FrameHeader h{kFailure, static_cast<uint32_t>(text.size())};
  memcpy(frame.data(), &h, sizeof(h));
  memcpy(frame.data() + sizeof(h), text.data(), text.size());
  for (auto& pp : peers_) {
    Peer& p = *pp;
    if (p.notified) continue;
    p.notified = true;
    sendControl(p, frame);
  }
}

void SocketTransport::collectPollFds(std::vector<pollfd>& out) const {
  std::vector<int> fds;
  for (const auto& r : recv_) r->readableFds(fds);
  for (int fd : fds) out.push_back({fd, POLLIN, 0});
  fds.clear();
  for (const auto& s : send_) s->pendingFds(fds);
  for (int fd : fds) out.push_back({fd, POLLOUT, 0});
  for (const auto& p : peers_)
    if (!p->controlClosed && !p->noticed && p->control.valid()) out.push_back({p->control.fd(), POLLIN, 0});
}

bool SocketTransport::drainReceives() {
  bool completed = false;
  for (auto& r : recv_) completed = r->progress() || completed;
  return completed;
}

void SocketTransport::sleep(uint32_t, int64_t maxNs) {
  // A socket holding a frame for a step we do not wait on yet stays
  // readable; polling it would return at once, forever, and burn the CPU
  // the ranks we wait for need (8 ranks on 2 cores waited milliseconds per
  // call so).  Take such frames into their slots first; a frame that
  // arrived complete may be the one we wait on: no sleep then.
  // Frames whose socket has room again leave now, for the same reason.
  if (drainReceives()) return;
  for (auto& s : send_)
    if (s->hasPending()) s->progress();
  std::vector<pollfd> fds;
  fds.push_back({wakeFd_, POLLIN, 0});
  collectPollFds(fds);
  timespec ts{static_cast<time_t>(maxNs / 1'000'000'000), static_cast<long>(maxNs % 1'000'000'000)};
  int rc = ppoll(fds.data(), fds.size(), &ts, nullptr);
  if (rc > 0 && (fds[0].revents & POLLIN)) {
    uint64_t v;
    (void)!::read(wakeFd_, &v, sizeof(v));
  }
}

void SocketTransport::wake() {
  if (wakeFd_ < 0) return;
  uint64_t one = 1;
  (void)!::write(wakeFd_, &one, sizeof(one));
}

}  // namespace coll::sock
