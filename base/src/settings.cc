#include "coll/base/settings.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdlib>
#include <stdexcept>

#include <fmt/format.h>

#include "coll/base/env.h"

namespace coll::settings {
namespace {

constexpr double kG = 1024.0 * 1024 * 1024;
constexpr double kM = 1024.0 * 1024;
constexpr double kK = 1024.0;

// Sorted by group, then as a reader meets them.  `agree`: part of the
// settings every rank compares at init (core/comm.cc, settingsHash).
constexpr Setting kTable[] = {
    // ---- core ----
    {"COLL_TIMEOUT", Type::Duration, Group::Core, 0, 0, "", "300s", false,
     "no-progress deadline of every wait (30, 30s, 500ms; 0 = none); the config field timeoutMs wins"},
    {"COLL_NCHANNELS", Type::Int, Group::Core, 1, 16, "", "2", true,
     "channels: the most at init, and forced per call (across hosts over sockets the tuner uses one, the tree "
     "all-reduce two, unless this forces more); the config field nChannels wins"},
    {"COLL_CHECK", Type::Int, Group::Core, 0, 1, "", "0", false,
     "1: every collective first exchanges its signature, so mismatched arguments fail with collArgMismatch"},
    {"COLL_BOARD", Type::Int, Group::Core, 0, 1, "", "1", true,
     "1: all-reduces, reduces, broadcasts and all-gathers outside groups whose every rank's part is at most 256 B "
     "go through the shared-memory board; 0: through the FIFOs"},
    {"COLL_RING_ORDER", Type::Choice, Group::Core, 0, 0, "numa|host|rank", "numa", true,
     "the ring and pipeline schedules' rank order: each host's ranks together (hosts by their lowest rank) and "
     "inside a host each NUMA node's (numa), hosts only (host), or rank order (rank); the trees are built over it "
     "(docs/algorithms.md, \"Ring order\")"},
    {"COLL_TRANSPORT", Type::Choice, Group::Core, 0, 0, "auto|shm|socket", "auto", true,
     "auto: shared memory on one host, sockets across hosts; shm or socket force one"},
    {"COLL_HOSTID", Type::Text, Group::Core, 0, 0, "", "", false,
     "the host identity in place of the boot id (tests fake several hosts with it)"},
    {"COLL_TOPO_FILE", Type::Text, Group::Core, 0, 0, "", "", false,
     "the machine the topology module reads instead of this one: an hwloc XML file (`colltopo --xml`) or "
     "`synthetic:<hwloc synthetic description>` (e.g. `synthetic:pack:2 numa:1 core:4 pu:2`); needs hwloc; a "
     "rank's own CPUs still come from its affinity mask"},
    {"COLL_PORT_RATE", Type::Rate, Group::Core, 0, 0, "", "", false,
     "this rank's network port rate in the cost model between hosts, in place of the rate sysfs reports for the "
     "interface its sockets use (the ranks agree on the slowest; below 10 GbE it sets beta); `tools/netsim run` "
     "sets its links' rate (a veth reports 10000 Mb/s whatever htb allows); `perf/calibrate --link-rate` "
     "defaults to it"},
    {"COLL_STAGED_PIECE_BYTES", Type::Bytes, Group::Device, 4 * kK, kG, "", "4M", true,
     "the host-staged device path's piece: the most bytes a piece holds on one side on a rank"},
    {"COLL_STAGED_BLOCK_BYTES", Type::Bytes, Group::Device, 256, kG, "", "256K", false,
     "the host-staged path's kernel takes a block per this many bytes of a piece's larger side (at most 16)"},
    {"COLL_STAGED_POOL_BYTES", Type::Bytes, Group::Device, kM, 1024 * kG, "", "1G", false,
     "the host-staged path's pinned pool per communicator: past it a call waits for earlier calls' slots"},
    // ---- device ----
    {"COLL_DEVICE_PATH", Type::Choice, Group::Device, 0, 0, "auto|ipc|staged", "auto", false,
     "device buffers: IPC when every rank maps every peer, else host-staged (auto); ipc refuses otherwise; staged "
     "always through the host"},
    {"COLL_DEVICE_STAGE_BYTES", Type::Bytes, Group::Device, 4 * kK, kG, "", "32M", true,
     "device staging region per rank (a multiple of 256)"},
    {"COLL_DEVICE_LL_BYTES", Type::Bytes, Group::Device, 0, 16 * kK, "", "2K", true,
     "device all-reduces and reduces up to this size take the LL protocol (0 = never)"},
    {"COLL_DEVICE_PROGRAM", Type::Choice, Group::Device, 0, 0, "1|auto|0", "auto", true,
     "which device calls above 32 KiB, and groups, run as program-kernel launches: all (1), none (0), or (auto) "
     "those that would queue more than 256 stream operations and all-reduces of 2-4 ranks up to 8 MiB"},
    {"COLL_DEVICE_CHANNELS", Type::Int, Group::Device, 0, 64, "", "0", true,
     "the program kernel's blocks per launch; 0 = SMs / (2 x ranks on the GPU), at most 64; above SMs / ranks on "
     "the GPU an error (every rank's blocks must be resident at once)"},
    // ---- transports ----
    {"COLL_SHM_SLOT_SIZE", Type::Bytes, Group::Transport, 4 * kK, 64 * kM, "", "256K", true,
     "FIFO slot size of every transport (a multiple of 64)"},
    {"COLL_SHM_NSLOTS", Type::Int, Group::Transport, 2, 16, "", "4", true,
     "FIFO slots per link (a ring step receives and sends at once, so at least 2)"},
    {"COLL_SOCKET_IFNAME", Type::Text, Group::Transport, 0, 0, "", "", false,
     "interfaces for sockets: eth,ib prefixes, =eth0 exact, ^docker,lo excluded; also where collGetUniqueId's root "
     "listens (default: loopback)"},
    {"COLL_SOCKET_FAMILY", Type::Choice, Group::Transport, 0, 0, "4|6", "", false,
     "the address family of sockets (default: the interface's first address)"},
    {"COLL_SOCKET_NSTREAMS", Type::Int, Group::Transport, 1, 16, "", "1", false,
     "TCP connections per peer and channel"},
    {"COLL_SOCKET_BUFSIZE", Type::Bytes, Group::Transport, 0, 256 * kM, "", "4M", false,
     "SO_SNDBUF and SO_RCVBUF of every data connection (0 = the kernel's autotuning)"},
    {"COLL_NET", Type::Choice, Group::Transport, 0, 0, "auto|ib|socket", "auto", true,
     "the network between hosts: ib when every rank has an active RDMA port (auto), else TCP; ib forces it, on "
     "one host too; socket: TCP"},
    {"COLL_IBVERBS_LIB", Type::Text, Group::Transport, 0, 0, "", "", false,
     "the verbs library the IB transport dlopens (default: libibverbs.so.1), e.g. transports/ib/emulation's"},
    {"COLL_IB_HCA", Type::Text, Group::Transport, 0, 0, "", "", false,
     "RDMA devices and ports to use, as NCCL_IB_HCA: mlx5 prefixes, mlx5_0:1 a port, =mlx5_0 exact names, "
     "^mlx5_2 excluded (default: every active port)"},
    {"COLL_IB_GID_INDEX", Type::Int, Group::Transport, -1, 1023, "", "-1", false,
     "the GID table entry of RoCE ports; -1: the RoCE v2 entry of an IPv4 address, else the first RoCE v2, else 0 "
     "(InfiniBand: 0)"},
    {"COLL_IB_TIMEOUT", Type::Int, Group::Transport, 1, 31, "", "20", false,
     "QP ack timeout: 4.096 us x 2^value before a retry"},
    {"COLL_IB_RETRY_CNT", Type::Int, Group::Transport, 0, 7, "", "7", false,
     "QP retries after a timeout before the connection fails"},
    {"COLL_IB_SL", Type::Int, Group::Transport, 0, 15, "", "0", false, "InfiniBand service level of the QPs"},
    {"COLL_IB_TC", Type::Int, Group::Transport, 0, 255, "", "0", false,
     "traffic class of the QPs (RoCE: the IP header's DSCP and ECN bits)"},
    {"COLL_IB_QPS_PER_CONNECTION", Type::Int, Group::Transport, 1, 16, "", "1", true,
     "QPs per connection; successive messages take them in turn (spreads flows over ECMP paths); at most the "
     "FIFO's slots"},
    {"COLL_IB_FAULT", Type::Choice, Group::Transport, 0, 0, "none|write-rkey|grant-rkey|grant-addr", "none", false,
     "tests only: this rank corrupts the rkey of its data writes, or the rkey or address of its clear-to-send "
     "grants, to show that the NIC or the peer's check stops it"},
    {"COLL_SPIN", Type::Int, Group::Transport, 0, 1e9, "", "", false,
     "polls before a waiter yields (default: 4000; 16 on shm and 0 on sockets when ranks outnumber the CPUs)"},
    {"COLL_YIELD", Type::Int, Group::Transport, 0, 1e9, "", "", false,
     "yields before a waiter sleeps (default: 200; 50 when ranks outnumber the CPUs)"},
    // ---- tuner ----
    {"COLL_ALGO", Type::Text, Group::Tuner, 0, 0, "", "", false,
     "force algorithms per collective and size, e.g. `allreduce:oneshot@0-4K,ring@4K-inf;broadcast:oneshot` "
     "(all-reduce: ring, tree, oneshot, doubling, halving; all-gather: ring, oneshot, doubling; broadcast: "
     "pipeline, tree, oneshot; reduce: pipeline; reduce-scatter: ring, oneshot, halving)"},
    {"COLL_CHUNK_SIZE", Type::Bytes, Group::Tuner, 64, kG, "", "", false,
     "force the chunk size (at most the slot payload)"},
    {"COLL_PROTO", Type::Choice, Group::Tuner, 0, 0, "simple", "simple", false,
     "the host protocol: chunked copies through slots (no host LL protocol)"},
    {"COLL_COST_FILE", Type::Text, Group::Tuner, 0, 0, "", "", true,
     "a calibration file from perf/calibrate: its alpha and beta replace the transport's stated cost (same "
     "transport only)"},
    {"COLL_COST_ALPHA", Type::Seconds, Group::Tuner, 0, 10, "", "", true,
     "the cost model's alpha, seconds per hop (after the file)"},
    {"COLL_COST_BETA", Type::Seconds, Group::Tuner, 1e-15, 1, "", "", true,
     "the cost model's beta, seconds per byte (after the file)"},
    {"COLL_COST_HANDOFF", Type::Seconds, Group::Tuner, 0, 1, "", "", true,
     "seconds added to every hop where all ranks share one kernel and outnumber its CPUs (default: the "
     "transport's, 1.5e-6 on shm, 0 on sockets; 0 turns it, the byte floor and the tree all-reduce exclusion "
     "off)"},
    // ---- launch ----
    {"COLL_RANK", Type::Text, Group::Launch, 0, 0, "", "", false, "collrun's rank (with COLL_NRANKS)"},
    {"COLL_NRANKS", Type::Text, Group::Launch, 0, 0, "", "", false, "collrun's job size"},
    {"COLL_LOCAL_RANK", Type::Text, Group::Launch, 0, 0, "", "", false, "collrun's rank on this host"},
    {"COLL_LOCAL_NRANKS", Type::Text, Group::Launch, 0, 0, "", "", false, "collrun's ranks on this host"},
    {"COLL_ROOT", Type::Text, Group::Launch, 0, 0, "", "", false,
     "host:port of the rendezvous that rank 0 hosts (before MASTER_ADDR/MASTER_PORT)"},
    {"COLL_SECRET", Type::Text, Group::Launch, 0, 0, "", "", false,
     "the job secret every rank proves to the rendezvous (16-64 hex digits, the same on every rank)"},
    {"COLL_ROOT_ADDR", Type::Text, Group::Launch, 0, 0, "", "", false,
     "host:port where collGetUniqueId's root listens (before COLL_SOCKET_IFNAME)"},
    // ---- debugging ----
    {"COLL_DEBUG", Type::Choice, Group::Debug, 0, 0, "WARN|INFO|TRACE|ERROR|OFF", "WARN", false,
     "the log level"},
    {"COLL_DEBUG_SUBSYS", Type::Text, Group::Debug, 0, 0, "", "", false,
     "subsystems logged: INIT,BOOT,TUNE,COLL,SHM,NET,EXEC (^ excludes those listed)"},
    {"COLL_KERNELS_ISA", Type::Choice, Group::Debug, 0, 0, "scalar|avx2|avx512", "", false,
     "lower the host reduction kernels' instruction set (default: the best the CPU has)"},
    {"COLL_FR_ENTRIES", Type::Int, Group::Debug, 0, 10000000, "", "2000", false,
     "calls each communicator's flight recorder keeps (0: off); dumped on a failure, SIGUSR2 or "
     "collCommDumpRecord (docs/flight-recorder.md)"},
    {"COLL_FR_DIR", Type::Text, Group::Debug, 0, 0, "", "", false,
     "where flight recorder dumps go, coll_fr.<comm>.r<rank>.jsonl (default: the working directory)"},
};

const char* groupName(Group g) {
  switch (g) {
    case Group::Core: return "core";
    case Group::Transport: return "transport";
    case Group::Device: return "device";
    case Group::Tuner: return "tuner";
    case Group::Launch: return "launch";
    case Group::Debug: return "debugging";
  }
  return "?";
}

const Setting& need(const char* name) {
  const Setting* s = find(name);
  if (s == nullptr) throw std::logic_error(fmt::format("setting {} is not in the settings table (settings.cc)", name));
  return *s;
}

const Setting& need(const char* name, Type t) {
  const Setting& s = need(name);
  if (s.type != t) throw std::logic_error(fmt::format("setting {} is read as another type than its table's", name));
  return s;
}

// "[lo, hi]" as the type writes its values.
std::string rangeText(const Setting& s) {
  auto size = [](double b) {
    if (b >= kG && std::fmod(b, kG) == 0) return fmt::format("{}G", b / kG);
    if (b >= kM && std::fmod(b, kM) == 0) return fmt::format("{}M", b / kM);
    if (b >= kK && std::fmod(b, kK) == 0) return fmt::format("{}K", b / kK);
    return fmt::format("{}", b);
  };
  switch (s.type) {
    case Type::Int: return fmt::format("[{}, {}]", s.min, s.max);
    case Type::Bytes: return fmt::format("[{}, {}]", size(s.min), size(s.max));
    case Type::Seconds: return fmt::format("[{:g}, {:g}] s", s.min, s.max);
    case Type::Choice: return s.choices;
    case Type::Duration: return "seconds, or with s / ms";
    case Type::Rate: return "a rate as tc writes it: 1gbit, 100mbit, 2.5gbit, 1gibit, 10mbps (bps = bytes/s)";
    case Type::Text: return "text";
  }
  return "";
}

Status outOfRange(const Setting& s, const std::string& text) {
  return makeError(collInvalidArgument, "{}='{}' must be in {}", s.name, text, rangeText(s));
}

template <class T>
Result<T> orDefault(const char* name, Result<std::optional<T>> v, Result<std::optional<T>> (*parse)(const char*, const std::string&)) {
  COLL_CHECK(v.status());
  if (v.value()) return *v.value();
  const Setting& s = need(name);
  if (*s.fallback == '\0') throw std::logic_error(fmt::format("setting {} has no default in the table", name));
  auto d = parse(name, s.fallback);
  COLL_CHECK(d.status());
  return *d.value();
}

Result<std::optional<long long>> parseInt(const char* name, const std::string& text) {
  const Setting& s = need(name, Type::Int);
  auto v = env::parseInt(name, text, static_cast<long>(s.min), static_cast<long>(s.max));
  if (!v.isOk()) return outOfRange(s, text);
  return std::optional<long long>(v.value());
}

Result<std::optional<size_t>> parseBytes(const char* name, const std::string& text) {
  const Setting& s = need(name, Type::Bytes);
  auto v = env::parseSize(name, text);
  COLL_CHECK(v.status());
  if (static_cast<double>(v.value()) < s.min || static_cast<double>(v.value()) > s.max) return outOfRange(s, text);
  return std::optional<size_t>(v.value());
}

Result<std::optional<long long>> parseDuration(const char* name, const std::string& text) {
  need(name, Type::Duration);
  auto v = env::parseDurationMs(name, text);
  COLL_CHECK(v.status());
  return std::optional<long long>(v.value());
}

Result<std::optional<std::string>> parseChoice(const char* name, const std::string& text) {
  const Setting& s = need(name, Type::Choice);
  // Any case; the table's spelling comes back.
  auto same = [](std::string_view a, std::string_view b) {
    return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
             return std::tolower(static_cast<unsigned char>(x)) == std::tolower(static_cast<unsigned char>(y));
           });
  };
  std::string_view all = s.choices;
  while (!all.empty()) {
    const size_t bar = all.find('|');
    if (same(all.substr(0, bar), text)) return std::optional<std::string>(std::string(all.substr(0, bar)));
    if (bar == std::string_view::npos) break;
    all.remove_prefix(bar + 1);
  }
  return makeError(collInvalidArgument, "{}='{}' must be one of {}", s.name, text, s.choices);
}

}  // namespace

std::span<const Setting> table() { return kTable; }

const Setting* find(std::string_view name) {
  for (const Setting& s : kTable)
    if (name == s.name) return &s;
  return nullptr;
}

Result<std::optional<long long>> readInt(const char* name) {
  need(name, Type::Int);
  auto v = env::get(name);
  if (!v) return std::optional<long long>();
  return parseInt(name, *v);
}

Result<std::optional<size_t>> readBytes(const char* name) {
  need(name, Type::Bytes);
  auto v = env::get(name);
  if (!v) return std::optional<size_t>();
  return parseBytes(name, *v);
}

Result<std::optional<long long>> readDurationMs(const char* name) {
  need(name, Type::Duration);
  auto v = env::get(name);
  if (!v) return std::optional<long long>();
  return parseDuration(name, *v);
}

Result<std::optional<double>> readRate(const char* name) {
  need(name, Type::Rate);
  auto v = env::get(name);
  if (!v) return std::optional<double>();
  auto r = env::parseRateBitsPerSec(name, *v);
  COLL_CHECK(r.status());
  return std::optional<double>(r.value());
}

Result<std::optional<double>> readSeconds(const char* name) {
  const Setting& s = need(name, Type::Seconds);
  auto v = env::get(name);
  if (!v) return std::optional<double>();
  char* end = nullptr;
  const double x = std::strtod(v->c_str(), &end);
  if (end == v->c_str() || *end != '\0' || !std::isfinite(x) || x < s.min || x > s.max)
    return makeError(collInvalidArgument, "{}='{}' must be a number of seconds in {} (e.g. 5e-7)", s.name, *v,
                     rangeText(s));
  return std::optional<double>(x);
}

Result<std::optional<std::string>> readChoice(const char* name) {
  need(name, Type::Choice);
  auto v = env::get(name);
  if (!v) return std::optional<std::string>();
  return parseChoice(name, *v);
}

std::optional<std::string> readText(const char* name) {
  need(name, Type::Text);
  return env::get(name);
}

Result<long long> intOr(const char* name) { return orDefault<long long>(name, readInt(name), parseInt); }
Result<size_t> bytesOr(const char* name) { return orDefault<size_t>(name, readBytes(name), parseBytes); }
Result<long long> durationMsOr(const char* name) {
  return orDefault<long long>(name, readDurationMs(name), parseDuration);
}
Result<std::string> choiceOr(const char* name) { return orDefault<std::string>(name, readChoice(name), parseChoice); }

Status checkAll() {
  for (const Setting& s : kTable) {
    switch (s.type) {
      case Type::Int: COLL_CHECK(readInt(s.name).status()); break;
      case Type::Bytes: COLL_CHECK(readBytes(s.name).status()); break;
      case Type::Duration: COLL_CHECK(readDurationMs(s.name).status()); break;
      case Type::Rate: COLL_CHECK(readRate(s.name).status()); break;
      case Type::Seconds: COLL_CHECK(readSeconds(s.name).status()); break;
      case Type::Choice: COLL_CHECK(readChoice(s.name).status()); break;
      case Type::Text: break;
    }
  }
  return Status::ok();
}

Result<std::string> canonicalValue(const char* name) {
  const Setting& s = need(name);
  const auto set = env::get(name);
  const std::string t = set ? *set : s.fallback;  // unset: the default, spelt alike
  if (t.empty()) return std::string("-");
  auto text = [](auto v) -> Result<std::string> {
    COLL_CHECK(v.status());
    return fmt::format("{}", *v.value());
  };
  switch (s.type) {
    case Type::Int: return text(parseInt(name, t));
    case Type::Bytes: return text(parseBytes(name, t));
    case Type::Duration: return text(parseDuration(name, t));
    case Type::Choice: return text(parseChoice(name, t));
    case Type::Rate: return text(readRate(name));        // no default: t is the environment's
    case Type::Seconds: return text(readSeconds(name));  // likewise
    case Type::Text: return t;
  }
  return t;
}

std::string describeInForce() {
  std::string out;
  size_t width = 0;
  for (const Setting& s : kTable) width = std::max(width, std::string_view(s.name).size());
  for (const Setting& s : kTable) {
    auto v = env::get(s.name);
    std::string value, from;
    if (v) {
      value = *v;
      from = "environment";
    } else if (*s.fallback != '\0') {
      value = s.fallback;
      from = "default";
    } else {
      value = "-";
      from = "unset";
    }
    out += fmt::format("{:<{}}  {:<12}  {:<11}  {}\n", s.name, width, value, from, groupName(s.group));
  }
  return out;
}

std::string markdownTable() {
  std::string out = "| setting | values | default | all ranks equal | what it does |\n|---|---|---|---|---|\n";
  for (const Setting& s : kTable)
  {
    std::string values = rangeText(s);
    for (size_t i = values.find('|'); i != std::string::npos; i = values.find('|', i + 2)) values.replace(i, 1, "\\|");
    out += fmt::format("| `{}` | {} | {} | {} | {} |\n", s.name, values, *s.fallback ? s.fallback : "-",
                       s.agree ? "yes" : "", s.help);
  }
  return out;
}

}  // namespace coll::settings
