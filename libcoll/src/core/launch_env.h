// launch_env.h — who started this process: collrun, torchrun, Open MPI or
// Slurm, read from the variables each launcher sets.
//
// detectLaunch is a pure function of the environment it is given (tests pass
// a map): no getenv, no DNS, no sockets.  collCommInitFromEnv calls it, then
// resolves the rendezvous host with resolveRootAddress.
//
// Rank and size, first launcher that applies wins:
//   1. collrun   COLL_RANK, COLL_NRANKS        (+COLL_LOCAL_RANK, COLL_LOCAL_NRANKS)
//   2. torchrun  RANK, WORLD_SIZE              (+LOCAL_RANK, LOCAL_WORLD_SIZE)
//   3. Open MPI  OMPI_COMM_WORLD_RANK, _SIZE   (+OMPI_COMM_WORLD_LOCAL_RANK, _LOCAL_SIZE)
//   4. Slurm     SLURM_PROCID, SLURM_NTASKS    (+SLURM_LOCALID; local size unknown)
// The order is innermost launcher first: collrun or torchrun started under
// srun or mpirun, or mpirun inside an sbatch script, see the outer
// launcher's variables too.  Two of launchers 1-3 that describe a job of the
// same size but give this process different ranks are an error (stale
// variables); with different sizes the one that comes first wins (nesting).
// Slurm's variables are inherited by everything started in an allocation,
// so they never conflict.  Half a pair (RANK without WORLD_SIZE) is an
// error, except for Slurm, where an sbatch/salloc shell has SLURM_NTASKS
// without being a task.
//
// Rendezvous address (needed when nranks > 1): COLL_ROOT=host:port, else
// MASTER_ADDR and MASTER_PORT.  Under a real torchrun (TORCHELASTIC_RUN_ID is
// set) torchrun's own store already listens on MASTER_PORT, so libcoll's
// root uses MASTER_PORT+1.
//
// Secret: COLL_SECRET, else derived (deterministically, so every rank gets
// the same) from the launcher's job id and the rendezvous address.  A
// derived secret is only as secret as the job id: the caller warns.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "coll/base/socket.h"
#include "coll/base/status.h"

namespace coll::core {

struct LaunchInfo {
  bool launched = false;    // false: no launcher variables, a 1-rank job
  int rank = 0;
  int nranks = 1;
  int localRank = 0;        // -1 when the launcher does not say
  int localNranks = 1;      // -1 when the launcher does not say (Slurm)
  std::string rootAddress;  // "host:port" ("[v6]:port"); host may be a name. Empty when nranks == 1
  std::optional<std::string> secretHex;  // 64 hex digits when derived; set when nranks > 1
  std::string source;        // "collrun", "torchrun", "openmpi", "slurm"; "" when not launched
  std::string vars;          // the rank and size as the launcher set them: "RANK=1, WORLD_SIZE=3"
  std::string secretSource;  // "COLL_SECRET" or how it was derived
  std::string rootSource;    // "COLL_ROOT", "MASTER_ADDR/MASTER_PORT" or "... MASTER_PORT+1 (torchrun)"
  bool secretDerived = false;      // true: warn that it comes from public data
  std::vector<std::string> notes;  // launchers that were present but not used, for INFO logs
};

using GetEnvFn = std::function<std::optional<std::string>(const char*)>;

// Pure: reads only through getenv (an empty value counts as unset).
Result<LaunchInfo> detectLaunch(const GetEnvFn& getenv);

// The 64-hex-digit secret derived from a job identity and the root address
// (exposed for tests; detectLaunch uses it).
std::string deriveSecretHex(const std::string& jobIdentity, const std::string& rootAddress);

// Not pure: "host:port" with a numeric host, "localhost" or a host name
// (resolved with getaddrinfo, IPv4 preferred).  `from` names the variables
// for error messages.
Result<net::Address> resolveRootAddress(const std::string& hostPort, const std::string& from);

}  // namespace coll::core
