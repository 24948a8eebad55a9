// launch_env.cc — launcher detection (pure) and rendezvous host resolution
// (the only part that talks to the system).  See launch_env.h.
#include "core/launch_env.h"

#include <arpa/inet.h>
#include <netdb.h>
#include <sys/socket.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstdlib>
#include <cstring>
#include <memory>

#include "bootstrap/unique_id.h"

namespace coll::core {
namespace {

constexpr long kMaxRanks = 1 << 20;

struct Launcher {
  const char* source;        // LaunchInfo::source
  const char* label;         // for messages
  const char* rankVar;
  const char* sizeVar;
  const char* localRankVar;
  const char* localSizeVar;  // null: the launcher has no usable one
  bool halfIsError;          // rank without size (or the reverse) is an error
  bool canConflict;          // compared with the winner (Slurm's are inherited by everything)
};

// Precedence order: innermost launcher first.
constexpr Launcher kLaunchers[] = {
    {"collrun", "collrun", "COLL_RANK", "COLL_NRANKS", "COLL_LOCAL_RANK", "COLL_LOCAL_NRANKS", true, true},
    {"torchrun", "torchrun", "RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE", true, true},
    {"openmpi", "Open MPI", "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_LOCAL_RANK",
     "OMPI_COMM_WORLD_LOCAL_SIZE", true, true},
    {"slurm", "Slurm", "SLURM_PROCID", "SLURM_NTASKS", "SLURM_LOCALID", nullptr, false, false},
};

struct Found {
  const Launcher* l = nullptr;
  int rank = 0, nranks = 1, localRank = -1, localNranks = -1;
  std::string rankText, sizeText;
  std::string describe() const {  // "SLURM_PROCID=3, SLURM_NTASKS=8"
    return fmt::format("{}={}, {}={}", l->rankVar, rankText, l->sizeVar, sizeText);
  }
};

// An empty value counts as unset, as in env::get.
std::optional<std::string> read(const GetEnvFn& getenv, const char* name) {
  auto v = getenv(name);
  if (v && v->empty()) return std::nullopt;
  return v;
}

Result<long> parseCount(const char* var, const std::string& text, const Launcher& l) {
  long x = 0;
  const char* end = text.data() + text.size();
  auto [p, ec] = std::from_chars(text.data(), end, x);
  if (ec == std::errc::result_out_of_range)
    return makeError(collInvalidUsage, "{}='{}' is out of range ({} variable)", var, text, l.label);
  if (ec != std::errc() || p != end)
    return makeError(collInvalidUsage, "{}='{}' is not an integer ({} variable)", var, text, l.label);
  return x;
}

// Reads one launcher's variables.  nullopt: not present (or, for Slurm,
// only half there).
Result<std::optional<Found>> readLauncher(const GetEnvFn& getenv, const Launcher& l, std::vector<std::string>& notes) {
  auto rankText = read(getenv, l.rankVar);
  auto sizeText = read(getenv, l.sizeVar);
  if (!rankText && !sizeText) return std::optional<Found>{};
  if (!rankText || !sizeText) {
    const char* set = rankText ? l.rankVar : l.sizeVar;
    const char* unset = rankText ? l.sizeVar : l.rankVar;
    const std::string& value = rankText ? *rankText : *sizeText;
    if (!l.halfIsError) {
      notes.push_back(fmt::format("{}={} is set without {}: not a {} task (a batch or salloc shell?), ignored", set,
                                  value, unset, l.label));
      return std::optional<Found>{};
    }
    return makeError(collInvalidUsage, "{}={} is set but {} is not ({} sets both; unset the stale one)", set, value,
                     unset, l.label);
  }
  Found f;
  f.l = &l;
  f.rankText = *rankText;
  f.sizeText = *sizeText;
  auto n = parseCount(l.sizeVar, *sizeText, l);
  COLL_CHECK(n.status());
  if (n.value() < 1) return makeError(collInvalidUsage, "{}={}: a job needs at least 1 rank", l.sizeVar, n.value());
  if (n.value() > kMaxRanks)
    return makeError(collInvalidUsage, "{}={} is more than libcoll's limit of {} ranks", l.sizeVar, n.value(),
                     kMaxRanks);
  auto r = parseCount(l.rankVar, *rankText, l);
  COLL_CHECK(r.status());
  if (r.value() < 0 || r.value() >= n.value())
    return makeError(collInvalidUsage, "{}={} is out of range for {}={} (ranks are 0..{})", l.rankVar, r.value(),
                     l.sizeVar, n.value(), n.value() - 1);
  f.nranks = static_cast<int>(n.value());
  f.rank = static_cast<int>(r.value());

  if (l.localSizeVar != nullptr) {
    if (auto t = read(getenv, l.localSizeVar)) {
      auto ln = parseCount(l.localSizeVar, *t, l);
      COLL_CHECK(ln.status());
      if (ln.value() < 1 || ln.value() > n.value())
        return makeError(collInvalidUsage, "{}={} is out of range for {}={} (1..{})", l.localSizeVar, ln.value(),
                         l.sizeVar, n.value(), n.value());
      f.localNranks = static_cast<int>(ln.value());
    }
  }
  if (auto t = read(getenv, l.localRankVar)) {
    auto lr = parseCount(l.localRankVar, *t, l);
    COLL_CHECK(lr.status());
    if (f.localNranks > 0 && (lr.value() < 0 || lr.value() >= f.localNranks))
      return makeError(collInvalidUsage, "{}={} is out of range for {}={} (0..{})", l.localRankVar, lr.value(),
                       l.localSizeVar, f.localNranks, f.localNranks - 1);
    if (lr.value() < 0 || lr.value() >= n.value())
      return makeError(collInvalidUsage, "{}={} is out of range for {}={} (0..{})", l.localRankVar, lr.value(),
                       l.sizeVar, n.value(), n.value() - 1);
    f.localRank = static_cast<int>(lr.value());
  }
  return std::optional<Found>{f};
}

Result<long> parsePort(const char* var, const std::string& text) {
  long p = 0;
  const char* end = text.data() + text.size();
  auto [ptr, ec] = std::from_chars(text.data(), end, p);
  if (ec != std::errc() || ptr != end || p < 1 || p > 65535)
    return makeError(collInvalidUsage, "{}: '{}' is not a port number (1-65535)", var, text);
  return p;
}

struct HostPort {
  std::string host, port;
};

// "host:port" or "[v6]:port"; the host keeps its brackets off.
std::optional<HostPort> splitHostPort(const std::string& text) {
  HostPort hp;
  if (!text.empty() && text[0] == '[') {
    auto close = text.find(']');
    if (close == std::string::npos || close + 1 >= text.size() || text[close + 1] != ':') return std::nullopt;
    hp.host = text.substr(1, close - 1);
    hp.port = text.substr(close + 2);
  } else {
    auto colon = text.rfind(':');
    if (colon == std::string::npos) return std::nullopt;
    hp.host = text.substr(0, colon);
    hp.port = text.substr(colon + 1);
    if (hp.host.find(':') != std::string::npos) return std::nullopt;  // bare IPv6 needs brackets
  }
  if (hp.host.empty() || hp.port.empty()) return std::nullopt;
  return hp;
}

std::string joinHostPort(const std::string& host, long port) {
  if (host.find(':') != std::string::npos) return fmt::format("[{}]:{}", host, port);
  return fmt::format("{}:{}", host, port);
}

std::string missingRootMessage(const Found& f) {
  const char* how = "set MASTER_ADDR and MASTER_PORT (or COLL_ROOT=host:port)";
  if (f.l->source == std::string_view("collrun"))
    how = "set COLL_ROOT=host:port (collrun always does; or MASTER_ADDR and MASTER_PORT)";
  else if (f.l->source == std::string_view("torchrun"))
    how = "set MASTER_ADDR and MASTER_PORT (torchrun sets them for its workers; or COLL_ROOT=host:port)";
  return fmt::format("launched by {} ({}) but no rendezvous address: {}", f.l->label, f.describe(), how);
}

struct Root {
  std::string address, from;
};

Result<Root> findRoot(const GetEnvFn& getenv, const Found& f) {
  if (auto root = read(getenv, "COLL_ROOT")) {
    auto hp = splitHostPort(*root);
    if (!hp) return makeError(collInvalidUsage, "COLL_ROOT='{}' is not host:port (or [v6addr]:port)", *root);
    auto port = parsePort("COLL_ROOT", hp->port);
    COLL_CHECK(port.status());
    return Root{joinHostPort(hp->host, port.value()), "COLL_ROOT"};
  }
  auto addr = read(getenv, "MASTER_ADDR");
  auto portText = read(getenv, "MASTER_PORT");
  if (!addr && !portText) return makeError(collInvalidUsage, "{}", missingRootMessage(f));
  if (!addr || !portText)
    return makeError(collInvalidUsage, "launched by {} ({}): {} is set but {} is not; set both (or COLL_ROOT=host:port)",
                     f.l->label, f.describe(), addr ? "MASTER_ADDR" : "MASTER_PORT",
                     addr ? "MASTER_PORT" : "MASTER_ADDR");
  std::string host = *addr;
  if (host.size() > 2 && host.front() == '[' && host.back() == ']') host = host.substr(1, host.size() - 2);
  size_t colons = static_cast<size_t>(std::count(host.begin(), host.end(), ':'));
  if (colons == 1)
    return makeError(collInvalidUsage, "MASTER_ADDR='{}' must be a host without a port (the port goes in MASTER_PORT)",
                     *addr);
  auto port = parsePort("MASTER_PORT", *portText);
  COLL_CHECK(port.status());
  if (read(getenv, "TORCHELASTIC_RUN_ID")) {
    // A real torchrun: its agent's store (or torch.distributed's) listens on
    // MASTER_PORT on the master host; the next port is libcoll's.
    if (port.value() == 65535)
      return makeError(collInvalidUsage,
                       "MASTER_PORT=65535: under torchrun libcoll's rendezvous uses MASTER_PORT+1; pick a lower port "
                       "or set COLL_ROOT=host:port");
    return Root{joinHostPort(host, port.value() + 1),
                "MASTER_ADDR/MASTER_PORT+1 (torchrun's own store holds MASTER_PORT)"};
  }
  return Root{joinHostPort(host, port.value()), "MASTER_ADDR/MASTER_PORT"};
}

// The launcher's public job identity, as "VAR=value" pairs; "" when none.
std::string jobIdentity(const GetEnvFn& getenv, const Found& f) {
  std::string src = f.l->source;
  auto pair = [&](const char* var) -> std::string {
    auto v = read(getenv, var);
    return v ? fmt::format("{}={}", var, *v) : std::string();
  };
  if (src == "torchrun") {
    auto id = read(getenv, "TORCHELASTIC_RUN_ID");
    if (id && *id != "none") return pair("TORCHELASTIC_RUN_ID");  // "none" is torchrun's default
    return {};
  }
  if (src == "slurm") {
    std::string job = pair("SLURM_JOB_ID");
    if (job.empty()) job = pair("SLURM_JOBID");
    if (job.empty()) return {};
    std::string step = pair("SLURM_STEP_ID");
    if (step.empty()) step = pair("SLURM_STEPID");
    return step.empty() ? job : job + ", " + step;
  }
  if (src == "openmpi") {
    std::string id = pair("OMPI_MCA_ess_base_jobid");
    return id.empty() ? pair("PMIX_NAMESPACE") : id;
  }
  return {};
}

uint64_t fnv1a(std::string_view s, uint64_t h) {
  for (unsigned char c : s) {
    h ^= c;
    h *= 0x100000001b3ull;
  }
  return h;
}

uint64_t mix64(uint64_t z) {  // splitmix64's finalizer
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

}  // namespace

std::string deriveSecretHex(const std::string& jobIdentity, const std::string& rootAddress) {
  // Not cryptographic (the inputs are public anyway): a fixed, portable
  // function so every rank, whatever its build, derives the same bytes.
  std::string input = "libcoll-derived-secret-v1";
  input.push_back('\0');
  input += jobIdentity;
  input.push_back('\0');
  input += rootAddress;
  std::string hex;
  uint64_t chain = 0xcbf29ce484222325ull;
  for (int lane = 0; lane < 4; ++lane) {
    chain = mix64(fnv1a(input, chain ^ (0x9e3779b97f4a7c15ull * static_cast<uint64_t>(lane + 1))));
    hex += fmt::format("{:016x}", chain);
  }
  return hex;
}

Result<LaunchInfo> detectLaunch(const GetEnvFn& getenv) {
  LaunchInfo info;
  std::vector<Found> present;
  for (const Launcher& l : kLaunchers) {
    auto f = readLauncher(getenv, l, info.notes);
    COLL_CHECK(f.status());
    if (f.value()) present.push_back(*f.value());
  }
  if (present.empty()) return info;  // not launched: a 1-rank job

  const Found& win = present.front();
  for (size_t i = 1; i < present.size(); ++i) {
    const Found& o = present[i];
    if (o.l->canConflict && o.nranks == win.nranks && o.rank != win.rank)
      return makeError(collInvalidUsage,
                       "conflicting launcher variables: {}={} ({}) but {}={} ({}), both for a job of {} ranks: one "
                       "set is stale, unset it ({}, {} or {}, {})",
                       win.l->rankVar, win.rank, win.l->label, o.l->rankVar, o.rank, o.l->label, win.nranks,
                       win.l->rankVar, win.l->sizeVar, o.l->rankVar, o.l->sizeVar);
    info.notes.push_back(fmt::format("{} variables ({}) are set too: using {}'s, the inner launcher", o.l->label,
                                     o.describe(), win.l->label));
  }

  info.launched = true;
  info.source = win.l->source;
  info.vars = win.describe();
  info.rank = win.rank;
  info.nranks = win.nranks;
  info.localRank = win.localRank;
  info.localNranks = win.localNranks;
  if (info.nranks == 1) {
    info.localRank = 0;
    info.localNranks = 1;
    return info;  // nothing to meet
  }

  auto root = findRoot(getenv, win);
  COLL_CHECK(root.status());
  info.rootAddress = root.value().address;
  info.rootSource = root.value().from;

  if (auto secret = read(getenv, "COLL_SECRET")) {
    auto parsed = boot::parseSecret(*secret);
    if (!parsed.isOk()) return Status(collInvalidUsage, parsed.status().message());
    info.secretHex = *secret;
    info.secretSource = "COLL_SECRET";
    return info;
  }
  std::string identity = jobIdentity(getenv, win);
  info.secretHex = deriveSecretHex(identity, info.rootAddress);
  info.secretDerived = true;
  info.secretSource = identity.empty()
                          ? fmt::format("derived from the rendezvous address {} alone ({} gave no job id)",
                                        info.rootAddress, win.l->label)
                          : fmt::format("derived from {} and the rendezvous address {}", identity, info.rootAddress);
  return info;
}

Result<net::Address> resolveRootAddress(const std::string& hostPort, const std::string& from) {
  auto hp = splitHostPort(hostPort);
  if (!hp) return makeError(collInvalidUsage, "rendezvous address '{}' (from {}) is not host:port", hostPort, from);
  // Numeric addresses and "localhost" exactly as before (no resolver).
  unsigned char buf[sizeof(in6_addr)];
  if (hp->host == "localhost" || inet_pton(AF_INET, hp->host.c_str(), buf) == 1 ||
      inet_pton(AF_INET6, hp->host.c_str(), buf) == 1) {
    auto a = net::parseAddress(hostPort);
    if (!a.isOk())
      return makeError(a.status().code(), "rendezvous address from {}: {}", from, a.status().message());
    return a;
  }
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* res = nullptr;
  int rc = getaddrinfo(hp->host.c_str(), nullptr, &hints, &res);
  if (rc != 0)
    return makeError(collInvalidUsage, "cannot resolve host '{}' of the rendezvous address {} (from {}): {}", hp->host,
                     hostPort, from, rc == EAI_SYSTEM ? strerror(errno) : gai_strerror(rc));
  std::unique_ptr<addrinfo, decltype(&freeaddrinfo)> guard(res, freeaddrinfo);
  const addrinfo* pick = nullptr;
  for (const addrinfo* ai = res; ai != nullptr; ai = ai->ai_next)
    if (ai->ai_family == AF_INET) {
      pick = ai;
      break;
    }
  if (pick == nullptr)
    for (const addrinfo* ai = res; ai != nullptr; ai = ai->ai_next)
      if (ai->ai_family == AF_INET6) {
        pick = ai;
        break;
      }
  if (pick == nullptr || pick->ai_addrlen > sizeof(sockaddr_storage))
    return makeError(collInvalidUsage, "host '{}' of the rendezvous address {} (from {}) has no IPv4/IPv6 address",
                     hp->host, hostPort, from);
  long port = std::strtol(hp->port.c_str(), nullptr, 10);
  net::Address a;
  memcpy(&a.storage, pick->ai_addr, pick->ai_addrlen);
  a.len = static_cast<socklen_t>(pick->ai_addrlen);
  if (pick->ai_family == AF_INET)
    reinterpret_cast<sockaddr_in*>(&a.storage)->sin_port = htons(static_cast<uint16_t>(port));
  else
    reinterpret_cast<sockaddr_in6*>(&a.storage)->sin6_port = htons(static_cast<uint16_t>(port));
  return a;
}

}  // namespace coll::core
