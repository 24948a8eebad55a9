// collrun --bind core|share: the rank-to-core maps (pure functions) and, through
// the binary, the CPUs each rank really runs on.
#include <catch2/catch.hpp>

#include <sched.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <map>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "binding.h"

#ifndef COLLRUN_PATH
#error "COLLRUN_PATH must name the collrun binary"
#endif

namespace {

// Runs `collrun ARGS -- sh -c 'echo $COLL_RANK $(sed -n s/Cpus_allowed_list:// p /proc/self/status)'`
// and returns rank -> the kernel's CPU list text of that rank.
std::map<int, std::string> rank_cpus(const std::string& args, int n) {
  const std::string cmd = std::string(COLLRUN_PATH) + " --no-prefix -n " + std::to_string(n) + " " + args +
                          " -- /bin/sh -c 'echo $COLL_RANK $(grep Cpus_allowed_list /proc/self/status | cut -f2)'";
  FILE* p = popen(cmd.c_str(), "r");
  REQUIRE(p != nullptr);
  std::map<int, std::string> out;
  char line[4096];
  while (std::fgets(line, sizeof line, p) != nullptr) {
    std::istringstream in(line);
    int rank = -1;
    std::string cpus;
    in >> rank >> cpus;
    out[rank] = cpus;
  }
  const int status = pclose(p);
  REQUIRE(WIFEXITED(status));
  REQUIRE(WEXITSTATUS(status) == 0);
  REQUIRE(out.size() == static_cast<size_t>(n));
  return out;
}

// "0-2,5" for a CPU set, the kernel's Cpus_allowed_list format.
std::string cpu_list(const cpu_set_t& set) {
  std::string s;
  for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu) {
    if (!CPU_ISSET(cpu, &set)) continue;
    int last = cpu;
    while (last + 1 < CPU_SETSIZE && CPU_ISSET(last + 1, &set)) ++last;
    if (!s.empty()) s += ',';
    s += std::to_string(cpu);
    if (last > cpu) {
      s += '-';
      s += std::to_string(last);
    }
    cpu = last;
  }
  return s;
}

}  // namespace

TEST_CASE("core_of_rank: one rank per core while they fit, else even blocks", "[collrun][bind]") {
  CHECK(collrun::core_of_rank(0, 1, 8) == 0);
  CHECK(collrun::core_of_rank(5, 8, 8) == 5);
  CHECK(collrun::core_of_rank(1, 2, 16) == 1);
  const int four_on_two[] = {0, 0, 1, 1};
  for (int r = 0; r < 4; ++r) CHECK(collrun::core_of_rank(r, 4, 2) == four_on_two[r]);
  const int five_on_two[] = {0, 0, 0, 1, 1};
  for (int r = 0; r < 5; ++r) CHECK(collrun::core_of_rank(r, 5, 2) == five_on_two[r]);
  // Every (nranks, ncores): in range, non-decreasing in the rank, and every
  // core gets floor or ceil of nranks/ncores ranks.
  for (int cores = 1; cores <= 24; ++cores)
    for (int n = 1; n <= 70; ++n) {
      std::vector<int> load(static_cast<size_t>(cores), 0);
      int prev = 0;
      for (int r = 0; r < n; ++r) {
        const int c = collrun::core_of_rank(r, n, cores);
        REQUIRE(c >= 0);
        REQUIRE(c < cores);
        REQUIRE(c >= prev);
        prev = c;
        ++load[static_cast<size_t>(c)];
      }
      for (int c = 0; c < cores; ++c) {
        INFO("nranks " << n << " cores " << cores << " core " << c);
        if (n >= cores) {
          REQUIRE(load[static_cast<size_t>(c)] >= n / cores);
          REQUIRE(load[static_cast<size_t>(c)] <= (n + cores - 1) / cores);
        } else {
          REQUIRE(load[static_cast<size_t>(c)] == (c < n ? 1 : 0));
        }
      }
    }
}

TEST_CASE("cores_of_rank: --bind share covers the cores once in runs of even size", "[collrun][bind]") {
  CHECK(collrun::cores_of_rank(0, 2, 16).first == 0);
  CHECK(collrun::cores_of_rank(0, 2, 16).count == 8);
  CHECK(collrun::cores_of_rank(1, 2, 16).first == 8);
  CHECK(collrun::cores_of_rank(1, 3, 8).first == 2);  // 0-1, 2-4, 5-7
  CHECK(collrun::cores_of_rank(1, 3, 8).count == 3);
  CHECK(collrun::cores_of_rank(3, 4, 2).first == collrun::core_of_rank(3, 4, 2));  // more ranks than cores
  CHECK(collrun::cores_of_rank(3, 4, 2).count == 1);
  for (int cores = 1; cores <= 24; ++cores)
    for (int n = 1; n <= 40; ++n) {
      INFO("nranks " << n << " cores " << cores);
      int next = 0;  // with fewer ranks than cores: the runs tile [0, cores)
      for (int r = 0; r < n; ++r) {
        const collrun::CoreRange c = collrun::cores_of_rank(r, n, cores);
        REQUIRE(c.first >= 0);
        REQUIRE(c.count >= 1);
        REQUIRE(c.first + c.count <= cores);
        if (n < cores) {
          REQUIRE(c.first == next);
          REQUIRE(c.count >= cores / n);
          REQUIRE(c.count <= (cores + n - 1) / n);
          next = c.first + c.count;
        } else {
          REQUIRE(c.count == 1);
          REQUIRE(c.first == collrun::core_of_rank(r, n, cores));
        }
      }
      if (n < cores) REQUIRE(next == cores);
    }
}

TEST_CASE("allowed_cores partitions this process's CPUs", "[collrun][bind]") {
  cpu_set_t mine;
  CPU_ZERO(&mine);
  REQUIRE(sched_getaffinity(0, sizeof mine, &mine) == 0);
  const std::vector<cpu_set_t> cores = collrun::allowed_cores();
  REQUIRE(!cores.empty());
  cpu_set_t seen;
  CPU_ZERO(&seen);
  for (const cpu_set_t& c : cores) {
    REQUIRE(CPU_COUNT(&c) > 0);
    cpu_set_t both;
    CPU_AND(&both, &seen, &c);
    REQUIRE(CPU_COUNT(&both) == 0);  // disjoint
    CPU_OR(&seen, &seen, &c);
  }
  CHECK(CPU_EQUAL(&seen, &mine));
}

TEST_CASE("collrun --bind core puts each rank on its core, share on its cores; none leaves the mask",
          "[collrun][bind]") {
  cpu_set_t mine;
  CPU_ZERO(&mine);
  REQUIRE(sched_getaffinity(0, sizeof mine, &mine) == 0);
  const std::vector<cpu_set_t> cores = collrun::allowed_cores();
  const int ncores = static_cast<int>(cores.size());
  REQUIRE(ncores > 0);
  for (int n : {1, 2, 3, 2 * ncores + 1}) {
    INFO("nranks " << n);
    const std::map<int, std::string> bound = rank_cpus("", n);  // the default is core
    for (const auto& [rank, cpus] : bound) {
      INFO("rank " << rank);
      const int core = collrun::core_of_rank(rank, n, ncores);
      CHECK(cpus == cpu_list(cores[static_cast<size_t>(core)]));
    }
    for (const auto& [rank, cpus] : rank_cpus("--bind none", n)) {
      INFO("rank " << rank);
      CHECK(cpus == cpu_list(mine));
    }
    for (const auto& [rank, cpus] : rank_cpus("--bind share", n)) {
      INFO("rank " << rank << " (share)");
      const collrun::CoreRange range = collrun::cores_of_rank(rank, n, ncores);
      cpu_set_t want;
      CPU_ZERO(&want);
      for (int c = range.first; c < range.first + range.count; ++c) CPU_OR(&want, &want, &cores[static_cast<size_t>(c)]);
      CHECK(cpus == cpu_list(want));
    }
  }
}
