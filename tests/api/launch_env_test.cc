// launch_env_test.cc — launcher detection from collrun, torchrun, Open MPI
// and Slurm variables (detectLaunch is pure: the environment is a map here).
#include <catch2/catch.hpp>

#include <arpa/inet.h>
#include <netdb.h>
#include <unistd.h>

#include <map>
#include <set>
#include <string>

#include "core/launch_env.h"

using coll::core::detectLaunch;
using coll::core::LaunchInfo;
using Env = std::map<std::string, std::string>;

namespace {

coll::Result<LaunchInfo> detect(const Env& env) {
  return detectLaunch([&](const char* name) -> std::optional<std::string> {
    auto it = env.find(name);
    if (it == env.end()) return std::nullopt;
    return it->second;
  });
}

LaunchInfo ok(const Env& env) {
  auto r = detect(env);
  INFO(r.status().message());
  REQUIRE(r.isOk());
  return r.value();
}

// The error message (the test fails if detection succeeded).
std::string error(const Env& env) {
  auto r = detect(env);
  REQUIRE_FALSE(r.isOk());
  CHECK(r.status().code() == collInvalidUsage);
  return r.status().message();
}

bool isHex64(const std::string& s) {
  if (s.size() != 64) return false;
  for (char c : s)
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  return true;
}

const Env kMaster = {{"MASTER_ADDR", "10.1.2.3"}, {"MASTER_PORT", "29500"}};

Env with(Env base, const Env& more) {
  for (const auto& [k, v] : more) base[k] = v;
  return base;
}

}  // namespace

using Catch::Matchers::Contains;

TEST_CASE("no launcher variables: a 1-rank job", "[launch]") {
  LaunchInfo li = ok({});
  CHECK_FALSE(li.launched);
  CHECK(li.rank == 0);
  CHECK(li.nranks == 1);
  CHECK(li.source.empty());
  // MASTER_* alone do not make a launch.
  CHECK_FALSE(ok(kMaster).launched);
  // Empty values count as unset.
  CHECK_FALSE(ok({{"RANK", ""}, {"WORLD_SIZE", ""}}).launched);
}

TEST_CASE("collrun: COLL_* exactly as collrun sets them", "[launch]") {
  LaunchInfo li = ok({{"COLL_RANK", "2"},
                      {"COLL_NRANKS", "4"},
                      {"COLL_LOCAL_RANK", "2"},
                      {"COLL_LOCAL_NRANKS", "4"},
                      {"COLL_ROOT", "127.0.0.1:40000"},
                      {"COLL_SECRET", "00112233445566778899aabbccddeeff"}});
  CHECK(li.launched);
  CHECK(li.source == "collrun");
  CHECK(li.rank == 2);
  CHECK(li.nranks == 4);
  CHECK(li.localRank == 2);
  CHECK(li.localNranks == 4);
  CHECK(li.rootAddress == "127.0.0.1:40000");
  CHECK(li.rootSource == "COLL_ROOT");
  REQUIRE(li.secretHex);
  CHECK(*li.secretHex == "00112233445566778899aabbccddeeff");
  CHECK(li.secretSource == "COLL_SECRET");
  CHECK_FALSE(li.secretDerived);
}

TEST_CASE("torchrun: RANK/WORLD_SIZE/LOCAL_* and MASTER_ADDR/PORT", "[launch]") {
  LaunchInfo li = ok(with(kMaster, {{"RANK", "5"}, {"WORLD_SIZE", "8"}, {"LOCAL_RANK", "1"}, {"LOCAL_WORLD_SIZE", "4"}}));
  CHECK(li.launched);
  CHECK(li.source == "torchrun");
  CHECK(li.rank == 5);
  CHECK(li.nranks == 8);
  CHECK(li.localRank == 1);
  CHECK(li.localNranks == 4);
  CHECK(li.rootAddress == "10.1.2.3:29500");
  CHECK(li.rootSource == "MASTER_ADDR/MASTER_PORT");
  CHECK(li.secretDerived);
  REQUIRE(li.secretHex);
  CHECK(isHex64(*li.secretHex));
}

TEST_CASE("a real torchrun holds MASTER_PORT: libcoll's root takes the next port", "[launch]") {
  LaunchInfo li = ok(with(kMaster, {{"RANK", "0"}, {"WORLD_SIZE", "2"}, {"TORCHELASTIC_RUN_ID", "job42"}}));
  CHECK(li.rootAddress == "10.1.2.3:29501");
  CHECK_THAT(li.rootSource, Contains("MASTER_PORT+1"));
  CHECK_THAT(li.secretSource, Contains("TORCHELASTIC_RUN_ID=job42"));
  // COLL_ROOT still wins as given.
  CHECK(ok(with(kMaster, {{"RANK", "0"}, {"WORLD_SIZE", "2"}, {"TORCHELASTIC_RUN_ID", "x"},
                          {"COLL_ROOT", "10.1.2.3:29500"}}))
            .rootAddress == "10.1.2.3:29500");
  CHECK_THAT(error(with(kMaster, {{"RANK", "0"}, {"WORLD_SIZE", "2"}, {"TORCHELASTIC_RUN_ID", "x"},
                                  {"MASTER_PORT", "65535"}})),
             Contains("MASTER_PORT=65535"));
}

TEST_CASE("Open MPI: OMPI_COMM_WORLD_*", "[launch]") {
  LaunchInfo li = ok(with(kMaster, {{"OMPI_COMM_WORLD_RANK", "3"},
                                    {"OMPI_COMM_WORLD_SIZE", "4"},
                                    {"OMPI_COMM_WORLD_LOCAL_RANK", "1"},
                                    {"OMPI_COMM_WORLD_LOCAL_SIZE", "2"},
                                    {"OMPI_MCA_ess_base_jobid", "1415512065"}}));
  CHECK(li.source == "openmpi");
  CHECK(li.rank == 3);
  CHECK(li.nranks == 4);
  CHECK(li.localRank == 1);
  CHECK(li.localNranks == 2);
  CHECK_THAT(li.secretSource, Contains("OMPI_MCA_ess_base_jobid=1415512065"));
  // PMIX_NAMESPACE when the MCA variable is missing.
  LaunchInfo pmix = ok(with(kMaster, {{"OMPI_COMM_WORLD_RANK", "0"}, {"OMPI_COMM_WORLD_SIZE", "4"},
                                      {"PMIX_NAMESPACE", "ns7"}}));
  CHECK_THAT(pmix.secretSource, Contains("PMIX_NAMESPACE=ns7"));
}

TEST_CASE("Slurm: SLURM_PROCID/SLURM_NTASKS/SLURM_LOCALID, local size unknown", "[launch]") {
  LaunchInfo li = ok(with(kMaster, {{"SLURM_PROCID", "6"},
                                    {"SLURM_NTASKS", "8"},
                                    {"SLURM_LOCALID", "2"},
                                    {"SLURM_NTASKS_PER_NODE", "4"},
                                    {"SLURM_JOB_ID", "1234"},
                                    {"SLURM_STEP_ID", "0"}}));
  CHECK(li.source == "slurm");
  CHECK(li.rank == 6);
  CHECK(li.nranks == 8);
  CHECK(li.localRank == 2);
  CHECK(li.localNranks == -1);
  CHECK_THAT(li.secretSource, Contains("SLURM_JOB_ID=1234"));
  CHECK_THAT(li.secretSource, Contains("SLURM_STEP_ID=0"));
  // An sbatch/salloc shell: SLURM_NTASKS without SLURM_PROCID is no task.
  LaunchInfo shell = ok(with(kMaster, {{"SLURM_NTASKS", "8"}, {"SLURM_JOB_ID", "1234"}}));
  CHECK_FALSE(shell.launched);
  CHECK_FALSE(shell.notes.empty());
}

TEST_CASE("a 1-rank launch needs no rendezvous address nor secret", "[launch]") {
  LaunchInfo li = ok({{"SLURM_PROCID", "0"}, {"SLURM_NTASKS", "1"}});
  CHECK(li.launched);
  CHECK(li.nranks == 1);
  CHECK(li.rootAddress.empty());
  CHECK_FALSE(li.secretHex);
}

TEST_CASE("precedence: collrun, then torchrun, then Open MPI, then Slurm", "[launch]") {
  // torchrun started by srun, one task per node: Slurm's ranks differ.
  Env torchUnderSrun = with(kMaster, {{"RANK", "5"}, {"WORLD_SIZE", "8"}, {"SLURM_PROCID", "1"},
                                      {"SLURM_NTASKS", "2"}, {"SLURM_JOB_ID", "9"}});
  LaunchInfo a = ok(torchUnderSrun);
  CHECK(a.source == "torchrun");
  CHECK(a.rank == 5);
  CHECK_FALSE(a.notes.empty());
  // mpirun inside an sbatch script: Slurm says procid 0 of 4 to every rank,
  // even with the same size; never a conflict.
  LaunchInfo b = ok(with(kMaster, {{"OMPI_COMM_WORLD_RANK", "3"}, {"OMPI_COMM_WORLD_SIZE", "4"},
                                   {"SLURM_PROCID", "0"}, {"SLURM_NTASKS", "4"}}));
  CHECK(b.source == "openmpi");
  CHECK(b.rank == 3);
  // torchrun over mpirun (one torchrun per node): different sizes, torchrun wins.
  LaunchInfo c = ok(with(kMaster, {{"RANK", "6"}, {"WORLD_SIZE", "8"}, {"OMPI_COMM_WORLD_RANK", "1"},
                                   {"OMPI_COMM_WORLD_SIZE", "2"}}));
  CHECK(c.source == "torchrun");
  CHECK(c.rank == 6);
  // collrun inside anything wins.
  LaunchInfo d = ok(with(torchUnderSrun, {{"COLL_RANK", "1"}, {"COLL_NRANKS", "3"},
                                          {"COLL_ROOT", "127.0.0.1:5000"}}));
  CHECK(d.source == "collrun");
  CHECK(d.rank == 1);
  CHECK(d.nranks == 3);
  CHECK(d.rootAddress == "127.0.0.1:5000");
  // Agreeing variables of two launchers are fine.
  CHECK(ok(with(kMaster, {{"RANK", "2"}, {"WORLD_SIZE", "4"}, {"OMPI_COMM_WORLD_RANK", "2"},
                          {"OMPI_COMM_WORLD_SIZE", "4"}}))
            .source == "torchrun");
}

TEST_CASE("conflicting ranks for the same job size are an error naming both", "[launch]") {
  std::string m = error(with(kMaster, {{"RANK", "1"}, {"WORLD_SIZE", "4"}, {"OMPI_COMM_WORLD_RANK", "2"},
                                       {"OMPI_COMM_WORLD_SIZE", "4"}}));
  CHECK_THAT(m, Contains("RANK=1"));
  CHECK_THAT(m, Contains("OMPI_COMM_WORLD_RANK=2"));
  CHECK_THAT(m, Contains("conflicting"));
  // A stale COLL_RANK exported in the shell, then mpirun: every rank would be 0.
  std::string s = error(with(kMaster, {{"COLL_RANK", "0"}, {"COLL_NRANKS", "4"}, {"COLL_ROOT", "127.0.0.1:1"},
                                       {"OMPI_COMM_WORLD_RANK", "3"}, {"OMPI_COMM_WORLD_SIZE", "4"}}));
  CHECK_THAT(s, Contains("COLL_RANK=0"));
  CHECK_THAT(s, Contains("OMPI_COMM_WORLD_RANK=3"));
}

TEST_CASE("missing rendezvous address names the variables to set", "[launch]") {
  std::string slurm = error({{"SLURM_PROCID", "3"}, {"SLURM_NTASKS", "8"}});
  CHECK_THAT(slurm, Contains("Slurm"));
  CHECK_THAT(slurm, Contains("SLURM_PROCID=3, SLURM_NTASKS=8"));
  CHECK_THAT(slurm, Contains("MASTER_ADDR and MASTER_PORT"));
  CHECK_THAT(slurm, Contains("COLL_ROOT"));
  CHECK_THAT(error({{"RANK", "1"}, {"WORLD_SIZE", "2"}}), Contains("torchrun (RANK=1, WORLD_SIZE=2)"));
  CHECK_THAT(error({{"OMPI_COMM_WORLD_RANK", "1"}, {"OMPI_COMM_WORLD_SIZE", "2"}}), Contains("Open MPI"));
  CHECK_THAT(error({{"COLL_RANK", "1"}, {"COLL_NRANKS", "2"}}), Contains("COLL_ROOT=host:port"));
  // Half of MASTER_ADDR/MASTER_PORT.
  CHECK_THAT(error({{"RANK", "1"}, {"WORLD_SIZE", "2"}, {"MASTER_ADDR", "node0"}}),
             Contains("MASTER_ADDR is set but MASTER_PORT is not"));
  CHECK_THAT(error({{"RANK", "1"}, {"WORLD_SIZE", "2"}, {"MASTER_PORT", "29500"}}),
             Contains("MASTER_PORT is set but MASTER_ADDR is not"));
}

TEST_CASE("rendezvous address forms", "[launch]") {
  Env torch = {{"RANK", "1"}, {"WORLD_SIZE", "2"}, {"MASTER_PORT", "29500"}};
  CHECK(ok(with(torch, {{"MASTER_ADDR", "node0.cluster"}})).rootAddress == "node0.cluster:29500");
  CHECK(ok(with(torch, {{"MASTER_ADDR", "fe80::1"}})).rootAddress == "[fe80::1]:29500");
  CHECK(ok(with(torch, {{"MASTER_ADDR", "[::1]"}})).rootAddress == "[::1]:29500");
  CHECK(ok(with(torch, {{"COLL_ROOT", "[::1]:7"}})).rootAddress == "[::1]:7");
  // COLL_ROOT beats MASTER_*.
  CHECK(ok(with(torch, {{"MASTER_ADDR", "n0"}, {"COLL_ROOT", "10.0.0.9:1234"}})).rootAddress == "10.0.0.9:1234");
  CHECK_THAT(error(with(torch, {{"MASTER_ADDR", "node0:29500"}})), Contains("without a port"));
  CHECK_THAT(error(with(torch, {{"MASTER_ADDR", "n0"}, {"MASTER_PORT", "http"}})), Contains("MASTER_PORT: 'http'"));
  CHECK_THAT(error(with(torch, {{"MASTER_ADDR", "n0"}, {"MASTER_PORT", "0"}})), Contains("MASTER_PORT"));
  CHECK_THAT(error(with(torch, {{"MASTER_ADDR", "n0"}, {"MASTER_PORT", "70000"}})), Contains("MASTER_PORT"));
  CHECK_THAT(error(with(torch, {{"COLL_ROOT", "node0"}})), Contains("COLL_ROOT='node0'"));
  CHECK_THAT(error(with(torch, {{"COLL_ROOT", "node0:x"}})), Contains("COLL_ROOT"));
}

TEST_CASE("bad values name the variable and the value", "[launch]") {
  CHECK_THAT(error(with(kMaster, {{"RANK", "one"}, {"WORLD_SIZE", "2"}})), Contains("RANK='one'"));
  CHECK_THAT(error(with(kMaster, {{"RANK", "1"}, {"WORLD_SIZE", "2x"}})), Contains("WORLD_SIZE='2x'"));
  CHECK_THAT(error(with(kMaster, {{"RANK", " 1"}, {"WORLD_SIZE", "2"}})), Contains("RANK=' 1'"));
  CHECK_THAT(error(with(kMaster, {{"RANK", "2"}, {"WORLD_SIZE", "2"}})), Contains("RANK=2 is out of range for WORLD_SIZE=2"));
  CHECK_THAT(error(with(kMaster, {{"RANK", "-1"}, {"WORLD_SIZE", "2"}})), Contains("RANK=-1"));
  CHECK_THAT(error(with(kMaster, {{"RANK", "0"}, {"WORLD_SIZE", "0"}})), Contains("WORLD_SIZE=0"));
  CHECK_THAT(error(with(kMaster, {{"RANK", "0"}, {"WORLD_SIZE", "-3"}})), Contains("WORLD_SIZE=-3"));
  CHECK_THAT(error(with(kMaster, {{"RANK", "0"}, {"WORLD_SIZE", "99999999999999999999"}})), Contains("WORLD_SIZE"));
  CHECK_THAT(error(with(kMaster, {{"RANK", "0"}, {"WORLD_SIZE", "2000000"}})), Contains("limit"));
  CHECK_THAT(error(with(kMaster, {{"SLURM_PROCID", "8"}, {"SLURM_NTASKS", "8"}})), Contains("SLURM_PROCID=8"));
  CHECK_THAT(error(with(kMaster, {{"OMPI_COMM_WORLD_RANK", "x"}, {"OMPI_COMM_WORLD_SIZE", "2"}})),
             Contains("OMPI_COMM_WORLD_RANK='x'"));
  // Local ranks and sizes.
  CHECK_THAT(error(with(kMaster, {{"RANK", "0"}, {"WORLD_SIZE", "8"}, {"LOCAL_RANK", "4"}, {"LOCAL_WORLD_SIZE", "4"}})),
             Contains("LOCAL_RANK=4"));
  CHECK_THAT(error(with(kMaster, {{"RANK", "0"}, {"WORLD_SIZE", "8"}, {"LOCAL_WORLD_SIZE", "9"}})),
             Contains("LOCAL_WORLD_SIZE=9"));
  CHECK_THAT(error(with(kMaster, {{"RANK", "0"}, {"WORLD_SIZE", "8"}, {"LOCAL_RANK", "abc"}})),
             Contains("LOCAL_RANK='abc'"));
  CHECK_THAT(error(with(kMaster, {{"SLURM_PROCID", "0"}, {"SLURM_NTASKS", "2"}, {"SLURM_LOCALID", "2"}})),
             Contains("SLURM_LOCALID=2"));
  // Half a pair.
  CHECK_THAT(error(with(kMaster, {{"RANK", "1"}})), Contains("RANK=1 is set but WORLD_SIZE is not"));
  CHECK_THAT(error(with(kMaster, {{"COLL_RANK", "1"}})), Contains("COLL_NRANKS"));
  CHECK_THAT(error(with(kMaster, {{"OMPI_COMM_WORLD_SIZE", "4"}})), Contains("OMPI_COMM_WORLD_RANK"));
  // A malformed COLL_SECRET.
  CHECK_THAT(error(with(kMaster, {{"RANK", "1"}, {"WORLD_SIZE", "2"}, {"COLL_SECRET", "xyz"}})),
             Contains("COLL_SECRET"));
}

TEST_CASE("derived secrets: the same on every rank, different per job", "[launch]") {
  Env slurm = with(kMaster, {{"SLURM_NTASKS", "4"}, {"SLURM_JOB_ID", "1234"}, {"SLURM_STEP_ID", "0"}});
  std::set<std::string> perRank;
  for (int r = 0; r < 4; ++r) {
    LaunchInfo li = ok(with(slurm, {{"SLURM_PROCID", std::to_string(r)}, {"SLURM_LOCALID", std::to_string(r % 2)}}));
    REQUIRE(li.secretHex);
    CHECK(isHex64(*li.secretHex));
    CHECK(li.secretDerived);
    perRank.insert(*li.secretHex);
  }
  CHECK(perRank.size() == 1);  // every rank derives the same secret
  const std::string s1234 = *perRank.begin();

  auto secretOf = [](const Env& env) { return ok(env).secretHex.value_or(""); };
  Env rank0 = with(slurm, {{"SLURM_PROCID", "0"}});
  CHECK(secretOf(rank0) == s1234);                                      // deterministic
  CHECK(secretOf(with(rank0, {{"SLURM_JOB_ID", "1235"}})) != s1234);    // another job
  CHECK(secretOf(with(rank0, {{"SLURM_STEP_ID", "1"}})) != s1234);      // another step
  CHECK(secretOf(with(rank0, {{"MASTER_PORT", "29501"}})) != s1234);    // another root
  CHECK(secretOf(with(rank0, {{"SLURM_JOB_ID", "1235"}})) == secretOf(with(rank0, {{"SLURM_JOB_ID", "1235"}})));

  // Open MPI and torchrun job ids too.
  Env ompi = with(kMaster, {{"OMPI_COMM_WORLD_RANK", "0"}, {"OMPI_COMM_WORLD_SIZE", "2"}});
  CHECK(secretOf(with(ompi, {{"OMPI_MCA_ess_base_jobid", "1"}})) !=
        secretOf(with(ompi, {{"OMPI_MCA_ess_base_jobid", "2"}})));
  Env torch = with(kMaster, {{"RANK", "0"}, {"WORLD_SIZE", "2"}});
  CHECK(secretOf(with(torch, {{"TORCHELASTIC_RUN_ID", "a"}})) != secretOf(with(torch, {{"TORCHELASTIC_RUN_ID", "b"}})));

  // No job id: derived from the root address alone, and says so.
  LaunchInfo bare = ok(with(torch, {}));
  CHECK(bare.secretDerived);
  CHECK_THAT(bare.secretSource, Contains("alone"));
  CHECK(bare.secretHex == ok(with(torch, {{"RANK", "1"}})).secretHex);
  // torchrun's default run id "none" is no job id.
  CHECK_THAT(ok(with(torch, {{"TORCHELASTIC_RUN_ID", "none"}})).secretSource, Contains("alone"));

  // COLL_SECRET always wins.
  LaunchInfo given = ok(with(rank0, {{"COLL_SECRET", "0123456789abcdef"}}));
  CHECK_FALSE(given.secretDerived);
  CHECK(given.secretSource == "COLL_SECRET");
  CHECK(given.secretHex == "0123456789abcdef");

  // The derivation itself is fixed: a change would split ranks of mixed builds.
  CHECK(coll::core::deriveSecretHex("", "") == coll::core::deriveSecretHex("", ""));
  CHECK(coll::core::deriveSecretHex("a", "b") != coll::core::deriveSecretHex("ab", ""));
}

TEST_CASE("resolveRootAddress: numeric, localhost, names, failures", "[launch]") {
  using coll::core::resolveRootAddress;
  auto v4 = resolveRootAddress("127.0.0.1:4242", "COLL_ROOT");
  REQUIRE(v4.isOk());
  CHECK(v4.value().toString() == "127.0.0.1:4242");
  auto lh = resolveRootAddress("localhost:80", "MASTER_ADDR/MASTER_PORT");
  REQUIRE(lh.isOk());
  CHECK(lh.value().toString() == "127.0.0.1:80");
  auto v6 = resolveRootAddress("[::1]:9", "COLL_ROOT");
  REQUIRE(v6.isOk());
  CHECK(v6.value().toString() == "[::1]:9");
  // A name through the resolver: this machine's own name, when the system
  // can resolve it (it usually can, through /etc/hosts).
  char host[256] = {0};
  REQUIRE(gethostname(host, sizeof(host) - 1) == 0);
  addrinfo hints{};
  hints.ai_family = AF_INET;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* res = nullptr;
  if (getaddrinfo(host, nullptr, &hints, &res) == 0) {
    char want[INET_ADDRSTRLEN] = {0};
    inet_ntop(AF_INET, &reinterpret_cast<sockaddr_in*>(res->ai_addr)->sin_addr, want, sizeof(want));
    freeaddrinfo(res);
    auto named = resolveRootAddress(std::string(host) + ":81", "MASTER_ADDR/MASTER_PORT");
    INFO("host " << host);
    REQUIRE(named.isOk());
    CHECK(named.value().toString() == std::string(want) + ":81");
  } else {
    WARN("host name " << host << " does not resolve here: the resolver path is not tested");
  }
  auto bad = resolveRootAddress("no-such-host.invalid:1", "MASTER_ADDR/MASTER_PORT");
  REQUIRE_FALSE(bad.isOk());
  CHECK_THAT(bad.status().message(), Contains("no-such-host.invalid"));
  CHECK_THAT(bad.status().message(), Contains("MASTER_ADDR"));
}
