#include "ib/ib_transport.h"

#include <sys/mman.h>
#include <time.h>

#include <algorithm>
#include <cstring>

#include "coll/base/clock.h"
#include "coll/base/log.h"

namespace coll::ib {
namespace {

constexpr int kInlineBytes = 64;  // a grant (32 B) and a probe (8 B) go inline
constexpr int64_t kProbeIntervalNs = 1'000'000'000;
constexpr int64_t kNoticeGraceNs = 2'000'000'000;
constexpr int64_t kFirstNapNs = 20'000, kLongestNapNs = 200'000;

struct Verdict {
  int32_t ok;
  char why[252];
};

}  // namespace

IbTransport::IbTransport(IbOptions opt) : opt_(std::move(opt)) {}

IbTransport::~IbTransport() {
  if (!conns_.empty()) {
    std::string perNic;
    for (size_t n = 0; n < nics_.size(); ++n)
      perNic += fmt::format("{}{} {} bytes", n ? ", " : "", nics_[n].label(), counters_.nicBytes[n]);
    COLL_LOG(Info, kNet, rank_,
             "ib: wrote {}; {} messages ({} from registered memory), {} send WRs, {} receive WRs, {} completions in {} polls, {} control bytes",
             perNic, counters_.dataWrs, counters_.externalWrs, counters_.sendWrs, counters_.recvWrs, counters_.cqes, counters_.polls,
             counters_.ctrlBytes);
  }
  // QPs before their CQs, MRs before their PDs, PDs before the devices.
  if (api_) {
    for (auto& l : lanes_) {
      if (l->qp) api_->destroyQp(l->qp);
      if (l->cq) api_->destroyCq(l->cq);
    }
  }
  lanes_.clear();
  if (api_) regs_.clear(*api_);
  for (Region* r : {&ring_, &cts_, &ctrl_, &staging_, &noticeOut_}) freeRegion(*r);
  if (api_) closeNics(*api_, nics_);
}

transport::LinkCost IbTransport::cost() const {
  // alpha: a NIC's write latency (1-2 us) plus posting, polling and the
  // executor's copy-in at both ends; beta: the NICs' line rate at the
  // ~92% that headers and the clear-to-send traffic leave of it.  The
  // reasoning behind the values: docs/PERFORMANCE.md, "Stated link costs".
  const double gbps = railGbps() > 0 ? railGbps() : 100;
  return {5e-6, 1.0 / (gbps / 8 * 1e9 * 0.92), 1e-6, 0};
}

double IbTransport::railGbps() const {
  double slowest = 0;
  for (const IbNic& n : nics_) slowest = slowest == 0 ? n.facts.rateGbps : std::min(slowest, n.facts.rateGbps);
  return slowest * static_cast<double>(nics_.size());
}

std::string IbTransport::describeNics() const {
  std::string out;
  for (const IbNic& n : nics_)
    out += fmt::format("{}{} ({:g} Gb/s {}, GID index {})", out.empty() ? "" : ", ", n.label(), n.facts.rateGbps,
                       linkLayerName(n.facts.link), n.gidIndex);
  return out;
}

Status IbTransport::allocRegion(Region& r, size_t bytes, int access, const char* what) {
  r.bytes = std::max<size_t>(bytes, 4096);
  void* p = mmap(nullptr, r.bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) {
    r.base = nullptr;
    return makeError(collSystemError, "ib: cannot map {} bytes for the {}: {}", r.bytes, what, std::strerror(errno));
  }
  r.base = static_cast<char*>(p);
  for (IbNic& nic : nics_) {
    ibv_mr* mr = api_->regMr(nic.pd, r.base, r.bytes, access);
    if (!mr)
      return makeError(collSystemError, "ib: registering the {} ({} bytes) on {} failed: {}", what, r.bytes,
                       nic.label(), std::strerror(errno));
    r.mrs.push_back(mr);
  }
  return Status::ok();
}

void IbTransport::freeRegion(Region& r) {
  if (api_)
    for (ibv_mr* mr : r.mrs) api_->deregMr(mr);
  r.mrs.clear();
  if (r.base) munmap(r.base, r.bytes);
  r.base = nullptr;
}

Status IbTransport::setUp(int rank, const std::vector<int>& peers, const transport::ConnectOptions& opt) {
  if (opt.nslots < 1 || opt.nslots > 128 || opt.slotBytes < 2 * transport::kSlotHeaderBytes ||
      opt.slotBytes >= (16u << 20) || opt.slotBytes % 64 != 0)
    return makeError(collInvalidArgument, "ib: bad FIFO geometry ({} slots of {} bytes; 1..128 slots below 16 MiB)",
                     opt.nslots, opt.slotBytes);
  auto api = verbsApi(opt_.settings.verbsLib);
  COLL_CHECK(api.status());
  api_ = api.value();
  auto nics = chooseNics(*api_, opt_.settings, opt_.numaNode);
  COLL_CHECK(nics.status());
  nics_ = nics.take();
  if (nics_.empty())
    return makeError(collSystemError, "ib: rank {} has no active RDMA port{} (verbs from {})", rank,
                     opt_.settings.hcaText.empty() ? std::string()
                                                   : fmt::format(" that COLL_IB_HCA={} selects", opt_.settings.hcaText),
                     api_->path);
  COLL_CHECK(openNics(*api_, opt_.settings, nics_));
  const size_t npeers = peers.size(), nch = static_cast<size_t>(geo_.nchannels);
  const size_t slots = npeers * nch * static_cast<size_t>(geo_.nslots);
  const int remote = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE;
  COLL_CHECK(allocRegion(ring_, slots * geo_.slotBytes, remote, "receive rings"));
  COLL_CHECK(allocRegion(cts_, slots * sizeof(CtsEntry), remote, "clear-to-send rings"));
  COLL_CHECK(allocRegion(ctrl_, npeers * kCtrlBlockBytes, remote, "control blocks"));
  COLL_CHECK(allocRegion(staging_, slots * geo_.slotBytes, 0, "send staging slots"));
  COLL_CHECK(allocRegion(noticeOut_, kNoticeBytes, 0, "failure notice"));
  // Every QP of every peer, in INIT.
  const int perPeer = geo_.qpsPerPeer();
  for (size_t i = 0; i < npeers; ++i)
    for (int l = 0; l < perPeer; ++l) {
      const int channel = l == 0 ? 0 : (l - 1) / geo_.qpsPerConn;
      IbNic& nic = nics_[static_cast<size_t>(channel) % nics_.size()];
      QpDepths d;
      d.send = l == 0 ? kCtrlSendDepth : 2 * geo_.nslots + 8;
      d.recv = l == 0 ? kCtrlRecvs : geo_.nslots;
      d.inlineBytes = kInlineBytes;
      auto lane = std::make_unique<Lane>();
      lane->depth = static_cast<uint32_t>(d.send);
      // A flush completes every outstanding WR, signaled or not.
      lane->cq = api_->createCq(nic.ctx, d.send + d.recv + 8, nullptr, nullptr, 0);
      if (!lane->cq)
        return makeError(collSystemError, "ib: ibv_create_cq on {} failed: {}", nic.label(), std::strerror(errno));
      auto qp = createRcQp(*api_, nic, lane->cq, d);
      if (!qp.isOk()) {
        api_->destroyCq(lane->cq);
        return qp.status();
      }
      lane->qp = qp.value();
      lanes_.push_back(std::move(lane));
    }
  (void)rank;
  return Status::ok();
}

Status IbTransport::connectPeers(const std::vector<char>& table, const std::vector<int>& peers) {
  const size_t recBytes = ibRecordBytes(nranks_, geo_);
  const int perPeer = geo_.qpsPerPeer();
  const size_t npeers = peers.size();
  conns_.resize(static_cast<size_t>(geo_.nchannels) * npeers);
  for (size_t i = 0; i < npeers; ++i) {
    const int p = peers[i];
    auto rec = parseIbRecord(table.data() + static_cast<size_t>(p) * recBytes, recBytes, p, rank_, nranks_, geo_);
    if (!rec.isOk() && table[static_cast<size_t>(p) * recBytes] == 0)
      return makeError(collRemoteError, "ib: rank {} could not set up its NICs (its own error says why)", p);
    COLL_CHECK(rec.status());
    const PeerRecord& r = rec.value();
    for (int l = 0; l < perPeer; ++l) {
      const int channel = l == 0 ? 0 : (l - 1) / geo_.qpsPerConn;
      const IbNic& nic = nics_[static_cast<size_t>(channel) % nics_.size()];
      Status st = connectRcQp(*api_, lanes_[i * perPeer + l]->qp, nic, r.nicOfChannel(channel), r.qpns[l],
                              opt_.settings);
      if (!st.isOk()) return makeError(st.code(), "{} (connecting to rank {})", st.message(), p);
    }
    IbControl::Memory cm;
    cm.block = ctrl_.base + i * kCtrlBlockBytes;
    cm.peerBlock = r.ctrlBlock();
    cm.peerBlockRkey = r.nicOfChannel(0).ctrlRkey;
    cm.noticeOut = noticeOut_.base;
    cm.noticeLkey = noticeOut_.mrs[0]->lkey;
    brokenSinceNs_.push_back(0);
    control_.push_back(
        std::make_unique<IbControl>(api_, p, nics_[0].label(), lanes_[i * perPeer].get(), cm, &counters_));
    COLL_CHECK(control_.back()->start());
    for (int c = 0; c < geo_.nchannels; ++c) {
      const size_t nicIdx = static_cast<size_t>(c) % nics_.size();
      const size_t conn = i * geo_.nchannels + static_cast<size_t>(c);
      ConnMemory m;
      m.ring = ring_.base + conn * geo_.nslots * geo_.slotBytes;
      m.ringRkey = ring_.mrs[nicIdx]->rkey;
      m.cts = reinterpret_cast<CtsEntry*>(cts_.base) + conn * geo_.nslots;
      m.staging = staging_.base + conn * geo_.nslots * geo_.slotBytes;
      m.stagingLkey = staging_.mrs[nicIdx]->lkey;
      m.peerRing = r.ringOf(c, geo_);
      m.peerRingRkey = r.nicOfChannel(c).ringRkey;
      m.peerCts = r.ctsOf(c, geo_);
      m.peerCtsRkey = r.nicOfChannel(c).ctsRkey;
      std::vector<Lane*> lanes;
      for (int q = 0; q < geo_.qpsPerConn; ++q) lanes.push_back(lanes_[i * perPeer + 1 + c * geo_.qpsPerConn + q].get());
      auto ic = std::make_unique<IbConnection>(api_, p, c, nics_[nicIdx].label(), static_cast<int>(nicIdx),
                                               geo_.nslots, geo_.slotBytes, std::move(lanes), m, &counters_, &regs_);
      if (opt_.settings.fault == "write-rkey") ic->inject(IbConnection::Inject::WriteRkey);
      if (opt_.settings.fault == "grant-rkey") ic->inject(IbConnection::Inject::GrantRkey);
      if (opt_.settings.fault == "grant-addr") ic->inject(IbConnection::Inject::GrantAddr);
      COLL_CHECK(ic->start());
      conns_[static_cast<size_t>(c) * npeers + i] = std::move(ic);
    }
  }
  return Status::ok();
}

Status IbTransport::connect(transport::Exchange& ex, int rank, const std::vector<transport::PeerInfo>& all,
                            const std::vector<int>& peers, const transport::ConnectOptions& opt) {
  rank_ = rank;
  nranks_ = static_cast<int>(all.size());
  copt_ = opt;
  geo_.nchannels = opt.nchannels;
  geo_.nslots = opt.nslots;
  geo_.slotBytes = opt.slotBytes;
  geo_.qpsPerConn = std::clamp(opt_.settings.qpsPerConnection, 1, std::min(kMaxQpsPerConn, std::max(1, opt.nslots)));
  peers_ = peers;
  std::sort(peers_.begin(), peers_.end());
  peerIndex_.assign(all.size(), -1);
  for (size_t i = 0; i < peers_.size(); ++i) peerIndex_[peers_[i]] = static_cast<int>(i);

  Status local = peers_.empty() ? Status::ok() : setUp(rank, peers_, opt);
  // Publish even after a failure (an all-zero record), so peers fail
  // cleanly instead of waiting.
  std::vector<char> record(ibRecordBytes(nranks_, geo_), 0);
  if (local.isOk() && !peers_.empty()) {
    WireHeader h{};
    h.rank = rank;
    h.nchannels = static_cast<uint32_t>(geo_.nchannels);
    h.qpsPerConn = static_cast<uint32_t>(geo_.qpsPerConn);
    h.nslots = static_cast<uint32_t>(geo_.nslots);
    h.slotBytes = geo_.slotBytes;
    h.nnics = static_cast<uint32_t>(nics_.size());
    h.npeers = static_cast<uint32_t>(peers_.size());
    h.ringAddr = reinterpret_cast<uintptr_t>(ring_.base);
    h.ctsAddr = reinterpret_cast<uintptr_t>(cts_.base);
    h.ctrlAddr = reinterpret_cast<uintptr_t>(ctrl_.base);
    for (size_t n = 0; n < nics_.size(); ++n) {
      h.nic[n] = wireNic(nics_[n]);
      h.nic[n].ringRkey = ring_.mrs[n]->rkey;
      h.nic[n].ctsRkey = cts_.mrs[n]->rkey;
      h.nic[n].ctrlRkey = ctrl_.mrs[n]->rkey;
    }
    std::vector<uint32_t> indexOf(all.size(), kNotAPeer);
    std::vector<std::vector<uint32_t>> qpnsFor(all.size());
    const int perPeer = geo_.qpsPerPeer();
    for (size_t i = 0; i < peers_.size(); ++i) {
      indexOf[peers_[i]] = static_cast<uint32_t>(i);
      for (int l = 0; l < perPeer; ++l) qpnsFor[peers_[i]].push_back(lanes_[i * perPeer + l]->qp->qp_num);
    }
    record = buildIbRecord(h, nranks_, geo_, indexOf, qpnsFor);
  }
  std::vector<char> table;
  COLL_CHECK(ex.allGather(record.data(), record.size(), table));
  Status st = local.isOk() ? connectPeers(table, peers_) : local;
  // Everyone's verdict, so a rank that failed is named on every rank.
  Verdict mine{};
  mine.ok = st.isOk() ? 1 : 0;
  if (!st.isOk()) snprintf(mine.why, sizeof(mine.why), "%s", st.message().c_str());
  std::vector<char> verdicts;
  COLL_CHECK(ex.allGather(&mine, sizeof(mine), verdicts));
  COLL_CHECK(st);
  for (int p : peers_) {
    Verdict v;
    memcpy(&v, verdicts.data() + static_cast<size_t>(p) * sizeof(Verdict), sizeof(v));
    v.why[sizeof(v.why) - 1] = '\0';
    if (v.ok != 1) return makeError(collRemoteError, "ib: rank {} could not connect: {}", p, v.why);
  }
  if (!peers_.empty())
    COLL_LOG(Info, kNet, rank, "ib connected to {} peers over {}, {} channels x {} QPs, {} slots x {} KiB",
             peers_.size(), describeNics(), geo_.nchannels, geo_.qpsPerConn, geo_.nslots, geo_.slotBytes >> 10);
  send_.resize(conns_.size());
  recv_.resize(conns_.size());
  for (size_t i = 0; i < conns_.size(); ++i) {
    send_[i] = std::make_unique<IbSendConn>(conns_[i].get(), geo_.slotBytes);
    recv_[i] = std::make_unique<IbRecvConn>(conns_[i].get());
  }
  return Status::ok();
}

IbConnection* IbTransport::conn(int channel, int peer) {
  const int i = peer >= 0 && peer < nranks_ ? peerIndex_[peer] : -1;
  if (i < 0 || channel < 0 || channel >= geo_.nchannels) return nullptr;
  return conns_[static_cast<size_t>(channel) * peers_.size() + i].get();
}

transport::SendConn* IbTransport::sendConn(int channel, int peer) {
  const int i = peer >= 0 && peer < nranks_ ? peerIndex_[peer] : -1;
  if (i < 0 || channel < 0 || channel >= geo_.nchannels) return nullptr;
  return send_[static_cast<size_t>(channel) * peers_.size() + i].get();
}

transport::RecvConn* IbTransport::recvConn(int channel, int peer) {
  const int i = peer >= 0 && peer < nranks_ ? peerIndex_[peer] : -1;
  if (i < 0 || channel < 0 || channel >= geo_.nchannels) return nullptr;
  return recv_[static_cast<size_t>(channel) * peers_.size() + i].get();
}

Status IbTransport::checkPeers() {
  for (auto& c : control_) {
    c->progress();
    if (c->noticed()) return makeError(collRemoteError, "rank {} failed: {}", c->peer(), c->noticeText());
    if (!c->error().empty()) return makeError(collRemoteError, "rank {} sent bad data: {}", c->peer(), c->error());
  }
  const int64_t now = nowNs();
  for (size_t i = 0; i < conns_.size(); ++i) {
    IbConnection& c = *conns_[i];
    c.progress();
    if (c.fault() == ConnFault::Failed) return makeError(collRemoteError, "ib: {}", c.faultText());
    if (c.fault() != ConnFault::PeerGone) continue;
    // A data QP in error while the peer's control QP still answers: the
    // peer lives and will send its notice (a failure of its own), unless
    // it does not come within the grace period.
    IbControl& ctl = *control_[i % peers_.size()];
    if (ctl.gone()) continue;
    if (brokenSinceNs_[i % peers_.size()] == 0) brokenSinceNs_[i % peers_.size()] = now;
    if (now - brokenSinceNs_[i % peers_.size()] > kNoticeGraceNs)
      return makeError(collRemoteError, "ib: {}; rank {} still answers on its control QP but sent no failure notice",
                       c.faultText(), c.peer());
  }
  return Status::ok();
}

const std::vector<int>& IbTransport::deadPeers() {
  // Dead: the peer's control QP is gone (a probe or notice its NIC did not
  // take, flushed receives).  A broken data QP alone is not death: probe
  // at once to tell which.
  dead_.clear();
  const int64_t now = nowNs();
  for (size_t i = 0; i < control_.size(); ++i) {
    bool dataBroken = false;
    for (int ch = 0; ch < geo_.nchannels; ++ch)
      dataBroken = dataBroken || conns_[static_cast<size_t>(ch) * peers_.size() + i]->fault() == ConnFault::PeerGone;
    control_[i]->probe(now, dataBroken ? 0 : kProbeIntervalNs);
    if (control_[i]->gone()) dead_.push_back(control_[i]->peer());
  }
  return dead_;
}

bool IbTransport::sendsInFlight() {
  bool any = false;
  for (auto& c : conns_) {
    if (!c->sendsInFlight()) continue;
    c->progress();
    any = any || c->sendsInFlight();
  }
  return any;
}

void IbTransport::notifyPeers(const std::string& why) {
  if (!noticeOut_.base) return;
  const size_t n = std::min(why.size(), kNoticeBytes);
  memcpy(noticeOut_.base, why.data(), n);
  for (auto& c : control_) c->sendNotice(n);
}

void IbTransport::reportWait(int waitingFor) {
  for (auto& c : control_) c->sendWait(waitingFor);
}

void IbTransport::waitReports(std::vector<int>& byRank) {
  for (auto& c : control_) {
    c->progress();
    if (c->waitingFor() != kNoWaitReport) byRank[c->peer()] = c->waitingFor();
  }
}

void IbTransport::sleep(uint32_t, int64_t maxNs) {
  // No descriptor wakes on an RDMA write: nap, longer while nothing comes.
  if (counters_.cqes != lastCqes_) napNs_ = 0;
  lastCqes_ = counters_.cqes;
  napNs_ = napNs_ == 0 ? kFirstNapNs : std::min(2 * napNs_, kLongestNapNs);
  if (woken_.exchange(false, std::memory_order_acq_rel)) return;
  const int64_t ns = std::min(napNs_, maxNs);
  timespec ts{0, static_cast<long>(ns)};
  nanosleep(&ts, nullptr);
}

void IbTransport::settleSends() {
  for (auto& c : conns_) c->settle();
}

Status IbTransport::registerBuffer(const void* p, size_t bytes) {
  if (!api_ || nics_.empty()) return Status::ok();  // no IB peer: nothing reads it
  return regs_.add(*api_, nics_, p, bytes);
}

void IbTransport::deregisterBuffer(const void* p) {
  if (api_) regs_.remove(*api_, p);
}

int countUsablePorts(const IbSettings& s, std::string* why) {
  auto api = verbsApi(s.verbsLib);
  if (!api.isOk()) {
    if (why) *why = api.status().message();
    return 0;
  }
  auto nics = chooseNics(*api.value(), s, -1);
  if (!nics.isOk()) {
    if (why) *why = nics.status().message();
    return 0;
  }
  if (nics.value().empty() && why) *why = "no active RDMA port" + (s.hcaText.empty() ? "" : " that COLL_IB_HCA=" + s.hcaText + " selects");
  return static_cast<int>(nics.value().size());
}

}  // namespace coll::ib
