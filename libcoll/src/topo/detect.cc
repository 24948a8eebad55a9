#include "topo/detect.h"

#include <sched.h>

#include <map>
#include <mutex>

#include "coll/base/settings.h"

namespace coll::topo {

Result<HostTopology> detectHost(const DetectOptions& opts) {
  const std::string spec = settings::readText("COLL_TOPO_FILE").value_or("");
  if (!spec.empty()) {
    auto t = readHwloc(spec, opts);
    if (!t.isOk()) return makeError(t.status().code(), "COLL_TOPO_FILE='{}': {}", spec, t.status().message());
    return t;
  }
  if (builtWithHwloc()) {
    auto t = readHwloc("", opts);
    if (t.isOk()) return t;
    // hwloc failed on this machine: sysfs may still answer; if it does not
    // either, hwloc's error says more.
    auto fromSysfs = readSysfs("/sys", opts);
    return fromSysfs.isOk() ? fromSysfs : t;
  }
  return readSysfs("/sys", opts);
}

Result<HostTopology> detectHostCached(const DetectOptions& opts) {
  static std::mutex mu;
  static std::map<std::pair<std::string, bool>, HostTopology> cache;
  const auto key = std::make_pair(settings::readText("COLL_TOPO_FILE").value_or(""), opts.devices);
  std::lock_guard<std::mutex> lock(mu);
  if (auto it = cache.find(key); it != cache.end()) return it->second;
  auto t = detectHost(opts);
  if (t.isOk()) cache.emplace(key, t.value());
  return t;
}

std::vector<int> boundCpus() {
  cpu_set_t set;
  CPU_ZERO(&set);
  std::vector<int> cpus;
  if (sched_getaffinity(0, sizeof(set), &set) != 0) return cpus;
  for (int c = 0; c < CPU_SETSIZE; ++c)
    if (CPU_ISSET(c, &set)) cpus.push_back(c);
  return cpus;
}

}  // namespace coll::topo
