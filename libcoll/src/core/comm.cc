#include "core/comm.h"
#include "core/record_hooks.h"
#include "device/entry/device_entry.h"

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <functional>
#include <unordered_set>

#include "bootstrap/bootstrap.h"
#include "core/transport_select.h"
#include "executor/board_collectives.h"
#include "coll/base/interfaces.h"
#include "schedule/ring_order.h"
#include "shm/shm_transport.h"
#include "topo/detect.h"
#include "tuner/cost_file.h"
#include "coll/base/backoff.h"
#include "coll/base/env.h"
#include "coll/base/log.h"
#include "coll/base/settings.h"

namespace coll::core {
namespace {


std::mutex gRegistryMu;
std::unordered_set<const collComm*>& registry() {
  static std::unordered_set<const collComm*> r;
  return r;
}

thread_local std::string tThreadError;

std::string bootId() {
  std::ifstream boot("/proc/sys/kernel/random/boot_id");
  std::string id;
  boot >> id;
  return id;
}

uint64_t hostHash() {
  char host[256] = {0};
  gethostname(host, sizeof(host) - 1);
  std::string id = host;
  id += "/";
  id += bootId();
  if (auto v = settings::readText("COLL_HOSTID")) id = *v;  // lets tests fake hosts
  return std::hash<std::string>{}(id);
}

// Ranks under one kernel share its CPUs even when they look like separate
// hosts (network namespaces with their own hostnames: tools/netsim).
uint64_t cpuHash() {
  char host[256] = {0};
  gethostname(host, sizeof(host) - 1);
  std::string id = bootId();
  if (id.empty()) id = host;
  return std::hash<std::string>{}(id);
}

// Config field, else environment, else the settings table's default; a bad
// value fails with the table's message (settings.h).
Status resolveConfig(const collConfig_t* cfg, collComm* c) {
  if (cfg != nullptr) {
    if (cfg->magic != COLL_CONFIG_MAGIC || cfg->size < offsetof(collConfig_t, commName) + sizeof(const char*))
      return makeError(collInvalidArgument,
                       "config: not initialized with COLL_CONFIG_INITIALIZER (magic {:#x}, size {})", cfg->magic, cfg->size);
    if (cfg->version > COLL_VERSION_CODE)
      return makeError(collInvalidArgument, "config: version {} is newer than this libcoll ({})", cfg->version,
                       COLL_VERSION_CODE);
  }
  COLL_CHECK(settings::checkAll());
  if (cfg && cfg->timeoutMs != COLL_CONFIG_UNDEF_INT) {
    if (cfg->timeoutMs < 0) return makeError(collInvalidArgument, "config.timeoutMs={} must be >= 0 (0: none)", cfg->timeoutMs);
    c->timeoutMs = cfg->timeoutMs;
  } else {
    auto ms = settings::durationMsOr("COLL_TIMEOUT");
    COLL_CHECK(ms.status());
    c->timeoutMs = ms.value();
  }
  const settings::Setting& channels = *settings::find("COLL_NCHANNELS");
  if (cfg && cfg->nChannels != COLL_CONFIG_UNDEF_INT) {
    if (cfg->nChannels < channels.min || cfg->nChannels > channels.max)
      return makeError(collInvalidArgument, "config.nChannels={} must be in [{}, {}]", cfg->nChannels, channels.min,
                       channels.max);
    c->nChannels = cfg->nChannels;
  } else {
    auto n = settings::intOr("COLL_NCHANNELS");
    COLL_CHECK(n.status());
    c->nChannels = static_cast<int>(n.value());
  }
  if (cfg && cfg->checkMode != COLL_CONFIG_UNDEF_INT) {
    c->checkMode = cfg->checkMode != 0;
  } else {
    auto n = settings::intOr("COLL_CHECK");
    COLL_CHECK(n.status());
    c->checkMode = n.value() == 1;
  }
  auto board = settings::intOr("COLL_BOARD");
  COLL_CHECK(board.status());
  c->board = board.value() == 1;
  auto piece = settings::bytesOr("COLL_STAGED_PIECE_BYTES");
  COLL_CHECK(piece.status());
  c->stagedPieceBytes = piece.value();
  auto block = settings::bytesOr("COLL_STAGED_BLOCK_BYTES");
  COLL_CHECK(block.status());
  c->stagedBlockBytes = block.value();
  auto order = settings::choiceOr("COLL_RING_ORDER");
  COLL_CHECK(order.status());
  c->ringOrderBy = order.value() == "numa"   ? collComm::RingOrderBy::Numa
                   : order.value() == "host" ? collComm::RingOrderBy::Host
                                             : collComm::RingOrderBy::Rank;
  auto rate = settings::readRate("COLL_PORT_RATE");
  COLL_CHECK(rate.status());
  if (rate.value()) c->portMbpsSet = std::max<int64_t>(1, std::llround(*rate.value() / 1e6));
  if (cfg && cfg->commName) c->name = cfg->commName;
  auto frEntries = settings::intOr("COLL_FR_ENTRIES");
  COLL_CHECK(frEntries.status());
  c->recorder = std::make_unique<record::FlightRecorder>(static_cast<size_t>(frEntries.value()));
  c->recordDir = settings::readText("COLL_FR_DIR").value_or("");
  return Status::ok();
}

Result<transport::ConnectOptions> connectOptions(int nChannels, const boot::Secret& secret, int64_t timeoutMs) {
  transport::ConnectOptions o;
  o.nchannels = nChannels;
  o.jobTag = boot::secretTag(secret);
  std::copy(secret.begin(), secret.end(), o.secret.begin());
  o.timeoutMs = timeoutMs;
  auto slot = settings::bytesOr("COLL_SHM_SLOT_SIZE");
  COLL_CHECK(slot.status());
  if (slot.value() % 64 != 0)
    return makeError(collInvalidArgument, "COLL_SHM_SLOT_SIZE={} must be a multiple of 64", slot.value());
  o.slotBytes = slot.value();
  auto slots = settings::intOr("COLL_SHM_NSLOTS");
  COLL_CHECK(slots.status());
  o.nslots = static_cast<int>(slots.value());
  return o;
}

// Settings that must be equal on every rank, or the ranks would set up
// different connections, cut calls differently, or misread each other:
// every setting the table marks (settings.h, `agree`), with the value this
// rank resolved (a config field may replace the variable), in table order.
struct Agreed {
  const char* name;
  std::string value;  // compared between ranks
};
Result<std::vector<Agreed>> agreedSettings(TransportMode mode, const transport::ConnectOptions& opts,
                                           const tune::CostSettings& cost, const collComm& c) {
  std::vector<Agreed> out;
  for (const settings::Setting& s : settings::table()) {
    if (!s.agree) continue;
    const std::string_view n = s.name;
    std::string v;
    if (n == "COLL_TRANSPORT") v = std::to_string(static_cast<int>(mode));
    else if (n == "COLL_NCHANNELS") v = std::to_string(opts.nchannels);
    else if (n == "COLL_SHM_SLOT_SIZE") v = std::to_string(opts.slotBytes);
    else if (n == "COLL_SHM_NSLOTS") v = std::to_string(opts.nslots);
    else if (n == "COLL_BOARD") v = std::to_string(c.board);
    else if (n == "COLL_STAGED_PIECE_BYTES") v = std::to_string(c.stagedPieceBytes);
    else if (n == "COLL_RING_ORDER") v = std::to_string(static_cast<int>(c.ringOrderBy));
    // The file's content, not its path: hosts may hold different files there.
    else if (n == "COLL_COST_FILE") v = cost.haveFile ? fmt::format("{}:{:a}:{:a}", cost.file.transport, cost.file.cost.alpha, cost.file.cost.beta) : "";
    else if (n == "COLL_COST_ALPHA") v = cost.haveAlpha ? fmt::format("{:a}", cost.alpha) : "";
    else if (n == "COLL_COST_BETA") v = cost.haveBeta ? fmt::format("{:a}", cost.beta) : "";
    else if (n == "COLL_COST_HANDOFF") v = cost.haveHandoff ? fmt::format("{:a}", cost.handoff) : "";
    else {
      auto canon = settings::canonicalValue(s.name);
      COLL_CHECK(canon.status());
      v = canon.take();
    }
    out.push_back({s.name, std::move(v)});
  }
  return out;
}

// Ranks on several hosts: every rank's port rate (COLL_PORT_RATE, else
// topo::portMbps of the interface its sockets use; loopback or unknown: -1),
// the slowest kept by all of them alike (tuner/port_cost.h).
Status agreeOnPortRate(boot::Bootstrap& b, collComm* c) {
  int64_t mine = c->portMbpsSet;
  auto itf = net::chooseInterfaceFromEnv(false);
  if (mine < 0 && itf.isOk() && !itf.value().loopback)
    mine = topo::portMbps("/sys", topo::DeviceKind::Ethernet, itf.value().name);
  std::vector<char> table;
  COLL_CHECK(b.allGather(&mine, sizeof(mine), table));
  std::vector<int64_t> rates(c->nranks);
  memcpy(rates.data(), table.data(), rates.size() * sizeof(int64_t));
  c->slowestPort = tune::slowestPort(rates);
  if (c->rank == 0)
    COLL_LOG(Info, kInit, c->rank, "network ports: {} (Mb/s per rank, -1: not known)", fmt::join(rates, " "));
  return Status::ok();
}

Status connectPeers(collComm* c, const boot::IdContents& id, const std::string& rootFrom, TransportMode mode,
                    const transport::ConnectOptions& opts, const tune::CostSettings& cost) {
  auto b = boot::Bootstrap::connect(id, c->rank, c->nranks, c->timeoutMs, rootFrom);
  COLL_CHECK(b.status());
  std::unique_ptr<boot::Bootstrap> bootstrap = b.take();

  auto agreedOrError = agreedSettings(mode, opts, cost, *c);
  COLL_CHECK(agreedOrError.status());
  const std::vector<Agreed> agreed = agreedOrError.take();
  transport::PeerInfo mine{c->rank, getpid(), hostHash(), {}, c->numaNode, cpuHash()};
  static_assert(sizeof(mine.agreed) / sizeof(mine.agreed[0]) >= 20, "PeerInfo::agreed holds every agreed setting");
  if (agreed.size() > std::size(mine.agreed))
    return makeError(collInternalError, "{} settings must agree, PeerInfo holds {}", agreed.size(), std::size(mine.agreed));
  for (size_t i = 0; i < agreed.size(); ++i)
    mine.agreed[i] = static_cast<uint32_t>(std::hash<std::string>{}(agreed[i].value)) | 1u;  // 0: no setting
  std::vector<char> table;
  COLL_CHECK(bootstrap->allGather(&mine, sizeof(mine), table));
  std::vector<transport::PeerInfo> all(c->nranks);
  memcpy(all.data(), table.data(), table.size());
  for (const auto& p : all)
    for (size_t i = 0; i < agreed.size(); ++i)
      if (p.agreed[i] != all[0].agreed[i]) {
        // Every rank holds the same table and fails here.  One more round
        // first, so that every rank has its table before any returns.
        (void)bootstrap->barrier();
        const char* name = agreed[i].name;
        const auto set = env::get(name);
        return makeError(collInvalidUsage,
                         "rank {} and rank 0 were started with different values of {} (this rank, {}, has {}); it must "
                         "be equal on every rank",
                         p.rank, name, c->rank, set ? fmt::format("{}={}", name, *set) : std::string("it unset"));
      }
  auto connected = connectTransports(*bootstrap, c->rank, all, mode, opts);
  COLL_CHECK(connected.status());
  c->localRanks = connected.value().localRanks;
  c->cpuSharers = 0;
  for (const auto& p : all) c->cpuSharers += p.cpuHash == mine.cpuHash ? 1 : 0;
  c->allLocal = connected.value().allLocal;
  c->transport = std::move(connected.value().transport);
  if (!c->allLocal) COLL_CHECK(agreeOnPortRate(*bootstrap, c));
  if (c->ringOrderBy != collComm::RingOrderBy::Rank) {
    const bool byNuma = c->ringOrderBy == collComm::RingOrderBy::Numa;
    std::vector<uint64_t> hosts(c->nranks), nodes(c->nranks, 0);
    for (const auto& p : all) {
      hosts[p.rank] = p.hostHash;
      if (byNuma) nodes[p.rank] = static_cast<uint64_t>(static_cast<int64_t>(p.numaNode));
    }
    c->ringOrder = sched::ringOrderGrouped(hosts, nodes);
    if (!c->ringOrder.empty() && c->rank == 0)
      COLL_LOG(Info, kInit, c->rank, "ring order by {} (ranks of a {} next to each other): {}",
               byNuma ? "host and NUMA node" : "host", byNuma ? "host, and of a NUMA node," : "host",
               fmt::join(c->ringOrder, " "));
  }
  bootstrap->finish();
  return Status::ok();
}

// The CPUs the tuner prices as shared (tuner.h), 0 for none: every rank
// runs under this kernel (cpuSharers counts the ranks under ours: all of
// them) and they outnumber its online CPUs, facts every rank sees alike.  A
// comm spread over several kernels never is: their CPU counts may differ,
// and every rank must price calls the same.
int sharedCpus(const collComm& c) {
  const long cpus = sysconf(_SC_NPROCESSORS_ONLN);
  return c.cpuSharers == c.nranks && cpus > 0 && c.nranks > cpus ? static_cast<int>(cpus) : 0;
}

// The NUMA node holding this rank's CPUs (topo/detect.h), -1 when they
// span several or the topology is unknown.  A COLL_TOPO_FILE that cannot be
// loaded is an error (it was asked for); this machine's topology that cannot
// be read leaves the node unknown, with a warning.
Result<int> rankNumaNode(int rank) {
  auto t = topo::detectHostCached(topo::DetectOptions{});
  if (!t.isOk()) {
    if (settings::readText("COLL_TOPO_FILE")) return t.status();
    COLL_LOG(Warn, kInit, rank, "topology: {} (NUMA nodes unknown)", t.status().message());
    return -1;
  }
  const std::vector<int> cpus = topo::boundCpus();
  const int node = topo::numaOfCpus(t.value(), cpus);
  COLL_LOG(Info, kInit, rank, "topology: {}; this rank on CPUs {} ({})", topo::summary(t.value()),
           topo::formatCpuList(cpus), node >= 0 ? fmt::format("NUMA node {}", node) : std::string("no single NUMA node"));
  return node;
}

}  // namespace

Result<collComm*> createComm(const InitParams& p) {
  auto comm = std::make_unique<collComm>();
  comm->rank = p.rank;
  comm->nranks = p.nranks;
  COLL_CHECK(resolveConfig(p.config, comm.get()));
  comm->sendSeq.assign(p.nranks, 0);
  comm->recvSeq.assign(p.nranks, 0);

  boot::IdContents id;
  if (p.nranks > 1) {
    auto decoded = boot::decodeId(*p.id);
    COLL_CHECK(decoded.status());
    id = decoded.value();
  }
  // The flight recorder's name for this communicator, alike on every rank:
  // a hash of its unique id's secret (one rank: of this process and comm).
  uint64_t idHash = 1469598103934665603ull;
  auto mix = [&](const void* p8, size_t n) {
    for (size_t i = 0; i < n; ++i) idHash = (idHash ^ static_cast<const unsigned char*>(p8)[i]) * 1099511628211ull;
  };
  if (p.nranks > 1) {
    mix(id.secret.data(), id.secret.size());
  } else {
    const int pid = getpid();
    const void* self = comm.get();
    mix(&pid, sizeof(pid));
    mix(&self, sizeof(self));
  }
  comm->commId = fmt::format("{:016x}", idHash);
  if (comm->recorder->on()) installRecordSignal();
  // Read every tuning knob before meeting the other ranks: a typo fails
  // here, on every rank alike, instead of half-way through setup.
  auto opts = connectOptions(comm->nChannels, id.secret, comm->timeoutMs);
  COLL_CHECK(opts.status());
  auto mode = transportModeFromEnv();
  COLL_CHECK(mode.status());
  tune::TunerInputs ti;
  ti.rank = p.rank;
  ti.nranks = p.nranks;
  ti.maxChannels = comm->nChannels;
  ti.slotPayloadBytes = opts.value().slotBytes - transport::kSlotHeaderBytes;
  // The cost model: the transport's stated alpha/beta, replaced by a
  // calibration file (COLL_COST_FILE) for that transport and by
  // COLL_COST_ALPHA/BETA; a malformed file fails init here.
  auto costSettings = tune::costSettingsFromEnv();
  COLL_CHECK(costSettings.status());
  auto applyCost = [&](const char* transportName, transport::LinkCost stated, bool log) {
    std::string note, portNote;
    // Between hosts, a port slower than the transport assumes sets beta
    // (before a cost file or COLL_COST_BETA, which replace it).
    stated.beta = tune::betaWithPort(stated.beta, comm->slowestPort, &portNote);
    tune::ResolvedCost rc =
        tune::resolveCost(costSettings.value(), transportName, sched::LinkCost{stated.alpha, stated.beta, stated.overhead}, &note);
    ti.cost = rc.cost;
    ti.costSource = rc.source;
    if (!portNote.empty() && rc.cost.beta == stated.beta) ti.costSource += ", " + portNote;
    if (log && !note.empty()) COLL_LOG(Info, kInit, p.rank, "{}", note);
    if (log)
      COLL_LOG(Info, kTune, p.rank, "cost model: alpha {:.3g} s, beta {:.3g} s/B ({:.2f} GB/s), overhead {:.3g} s, from {}",
               ti.cost.alpha, ti.cost.beta, 1e-9 / ti.cost.beta, ti.cost.overhead, ti.costSource);
  };
  applyCost("shm", shm::ShmTransport().cost(), p.nranks == 1);
  auto tuner = tune::Tuner::create(ti);
  COLL_CHECK(tuner.status());

  int64_t t0 = nowNs();
  if (p.nranks > 1) {
    auto node = rankNumaNode(p.rank);
    COLL_CHECK(node.status());
    comm->numaNode = node.value();
    COLL_CHECK(connectPeers(comm.get(), id, p.rootFrom, mode.value(), opts.value(), costSettings.value()));
    // Now the links are known: tune for the transport actually used.
    applyCost(comm->transport->name(), comm->transport->cost(), true);
    ti.allLocal = comm->allLocal;
    ti.transport = comm->transport->name();
    ti.sharedCpus = sharedCpus(*comm);
    if (ti.sharedCpus > 0) {
      const auto& cs = costSettings.value();
      ti.handoff = cs.haveHandoff ? cs.handoff : comm->transport->cost().handoff;
      COLL_LOG(Info, kTune, p.rank, "cost model: {} ranks share {} CPUs: handoff {:.3g} s per hop ({})", p.nranks,
               ti.sharedCpus, ti.handoff, cs.haveHandoff ? "COLL_COST_HANDOFF" : "transport default");
    }
    tuner = tune::Tuner::create(ti);
    COLL_CHECK(tuner.status());
  }
  comm->tuner.emplace(tuner.take());

  comm->view.rank = p.rank;
  comm->view.nranks = p.nranks;
  comm->view.transport = comm->transport.get();
  comm->view.aborted = &comm->aborted;
  comm->view.timeoutMs = comm->timeoutMs;
  // Spinning is budgeted by the ranks that compete for these CPUs; a rank
  // spinning on a core its peer (or the kernel's network stack) needs slows
  // everyone down.
  const int sharers = std::max(comm->localRanks, comm->cpuSharers);
  comm->view.spinBudget =
      defaultSpinBudget(sharers, comm->transport && std::string(comm->transport->name()).find("socket") != std::string::npos);
  comm->view.yieldBudget = defaultYieldBudget(sharers);
  comm->view.name = comm->name.c_str();
  // Decided once: whether this transport has every rank's board.
  if (comm->board) comm->boards = exec::collectBoards(comm->view);
  comm->board = !comm->boards.empty();
  comm->view.boards = comm->board ? comm->boards.data() : nullptr;
  comm->view.boardOps = &comm->boardOps;
  comm->boardFinished.assign(comm->board ? p.nranks : 0, 0);
  comm->view.boardFinished = comm->boardFinished.data();
  COLL_LOG(Info, kInit, p.rank, "comm {} rank {}/{} ready in {:.1f} ms ({}, {} local ranks, {} channels, timeout {} ms{})",
           comm->name, p.rank, p.nranks, (nowNs() - t0) / 1e6, comm->transport ? comm->transport->name() : "no transport",
           comm->localRanks, comm->nChannels, comm->timeoutMs,
           comm->checkMode ? ", COLL_CHECK=1" : "");
  collComm* raw = comm.release();
  registerComm(raw);
  return raw;
}

void destroyComm(collComm* comm) {
  teardownDevice(comm);
  unregisterComm(comm);
  comm->magic = 0;
  delete comm;
}

collResult_t fail(collComm* comm, const Status& s) {
  if (s.isOk()) return collSuccess;
  if (comm != nullptr) {
    {
      std::lock_guard<std::mutex> lock(comm->errorMu);
      comm->lastError = s.message();
    }
    // Failures inside communication leave peers in an unknown state: the
    // comm is unusable from now on (argument errors are not: nothing moved).
    if (s.code() == collRemoteError || s.code() == collTimeout || s.code() == collArgMismatch ||
        s.code() == collAborted || s.code() == collSystemError || s.code() == collInternalError) {
      int expected = collSuccess;
      if (comm->asyncError.compare_exchange_strong(expected, s.code())) {
        {
          std::lock_guard<std::mutex> lock(comm->errorMu);
          comm->failure = s.message();
        }
        // The first failure: what every rank was doing goes to a file.
        if (comm->recorder && comm->recorder->on()) (void)dumpRecord(comm, dumpReasonFor(s), s.message());
      }
    }
  }
  setThreadError(s.message());
  return s.code();
}

void registerComm(collComm* c) {
  std::lock_guard<std::mutex> lock(gRegistryMu);
  registry().insert(c);
}

void unregisterComm(collComm* c) {
  std::lock_guard<std::mutex> lock(gRegistryMu);
  registry().erase(c);
}

void forEachLiveComm(const std::function<void(collComm*)>& f) {
  std::lock_guard<std::mutex> lock(gRegistryMu);
  for (const collComm* c : registry()) f(const_cast<collComm*>(c));
}

bool isLiveComm(const collComm* c) {
  std::lock_guard<std::mutex> lock(gRegistryMu);
  return registry().count(c) != 0;
}

void setThreadError(const std::string& msg) { tThreadError = msg; }
const char* threadError() { return tThreadError.c_str(); }

}  // namespace coll::core
