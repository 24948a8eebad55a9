#include "binding.h"

#include <fstream>
#include <map>
#include <utility>

namespace collrun {
namespace {

// (package, core) of a CPU, or nothing when sysfs does not say.
bool core_key(int cpu, std::pair<long, long>& key) {
  const std::string dir = "/sys/devices/system/cpu/cpu" + std::to_string(cpu) + "/topology/";
  std::ifstream pkg(dir + "physical_package_id"), core(dir + "core_id");
  long p = -1, c = -1;
  if (!(pkg >> p) || !(core >> c)) return false;
  key = {p, c};
  return true;
}

}  // namespace

int core_of_rank(int rank, int nranks, int ncores) {
  if (ncores <= 0 || nranks <= 0 || rank < 0) return 0;
  if (nranks <= ncores) return rank;
  return static_cast<int>(static_cast<long long>(rank) * ncores / nranks);
}

CoreRange cores_of_rank(int rank, int nranks, int ncores) {
  if (ncores <= 0 || nranks <= 0 || rank < 0 || nranks >= ncores) return {core_of_rank(rank, nranks, ncores), 1};
  const auto edge = [&](int r) { return static_cast<int>(static_cast<long long>(r) * ncores / nranks); };
  return {edge(rank), edge(rank + 1) - edge(rank)};
}

std::vector<cpu_set_t> allowed_cores() {
  std::vector<cpu_set_t> cores;
  cpu_set_t mine;
  CPU_ZERO(&mine);
  if (sched_getaffinity(0, sizeof mine, &mine) != 0) return cores;
  std::map<std::pair<long, long>, size_t> index;  // (package, core) -> cores[i]
  for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu) {
    if (!CPU_ISSET(cpu, &mine)) continue;
    std::pair<long, long> key;
    size_t at = cores.size();
    if (core_key(cpu, key)) {
      auto [it, fresh] = index.emplace(key, cores.size());
      at = it->second;
      if (!fresh) {
        CPU_SET(cpu, &cores[at]);
        continue;
      }
    }
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(cpu, &set);
    cores.push_back(set);
  }
  return cores;
}

namespace {

std::string cpu_text(const cpu_set_t& cpus) {
  std::string list;
  for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu)
    if (CPU_ISSET(cpu, &cpus)) {
      if (!list.empty()) list += ',';
      list += std::to_string(cpu);
    }
  return " (CPU " + list + ")";
}

}  // namespace

std::string describe_core(int index, const cpu_set_t& cpus) { return "core " + std::to_string(index) + cpu_text(cpus); }

std::string describe_cores(CoreRange range, const cpu_set_t& cpus) {
  if (range.count == 1) return describe_core(range.first, cpus);
  return "cores " + std::to_string(range.first) + "-" + std::to_string(range.first + range.count - 1) + cpu_text(cpus);
}

}  // namespace collrun
