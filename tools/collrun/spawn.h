// Starting one rank: fork, set the child up, exec, and learn reliably whether
// the exec worked (a close-on-exec pipe carries the child's errno back).
#pragma once

#include <sched.h>
#include <sys/resource.h>
#include <sys/types.h>

namespace collrun {

class SignalPipe;

struct SpawnRequest {
  const char* file = nullptr;      // PROG, searched in collrun's PATH
  char* const* argv = nullptr;     // null-terminated
  char* const* envp = nullptr;     // null-terminated
  int stdin_fd = -1;               // dup'ed to 0; -1 = inherit
  int stdout_fd = -1;              // dup'ed to 1; -1 = inherit
  int stderr_fd = -1;              // dup'ed to 2; -1 = inherit
  const struct rlimit* nofile = nullptr;  // RLIMIT_NOFILE to restore, or null
  const SignalPipe* signals = nullptr;    // dispositions to restore
  const cpu_set_t* cpus = nullptr;        // affinity to set, or null
};

struct SpawnResult {
  pid_t pid = -1;  // -1: fork failed (errno set)
  // Read end of the exec-status pipe; wait_exec() consumes and closes it.
  int status_fd = -1;
};

// Forks and execs.  Must be called with all signals blocked (see
// SignalPipe::block_all) so that no handler of collrun runs in the child.
// The child gets PR_SET_PDEATHSIG(SIGKILL) so it dies with collrun.
SpawnResult spawn(const SpawnRequest& req);

// Waits until the child has exec'ed or failed to.  Returns 0 on success,
// the exec errno otherwise.  Closes status_fd.
int wait_exec(SpawnResult& child);

}  // namespace collrun
