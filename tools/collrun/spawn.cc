#include "spawn.h"

#include <cerrno>
#include <fcntl.h>
#include <sys/prctl.h>
#include <unistd.h>

#include "io_util.h"
#include "signals.h"

namespace collrun {
namespace {

// Puts `from` on `to` in the child.  dup2 clears FD_CLOEXEC on the copy; when
// from == to nothing is copied, so the flag is cleared by hand.
bool move_fd(int from, int to) {
  if (from < 0) return true;
  if (from == to) {
    int flags = fcntl(to, F_GETFD);
    return flags >= 0 && fcntl(to, F_SETFD, flags & ~FD_CLOEXEC) == 0;
  }
  while (dup2(from, to) < 0) {
    if (errno != EINTR) return false;
  }
  return true;
}

[[noreturn]] void child_fail(int status_fd, int err) {
  [[maybe_unused]] bool ok = write_all(status_fd, reinterpret_cast<const char*>(&err),
                                       sizeof err);
  _exit(127);
}

// Runs in the child between fork and exec: async-signal-safe calls only.
[[noreturn]] void child_main(const SpawnRequest& req, pid_t parent, int status_fd) {
  if (req.signals != nullptr) req.signals->reset_in_child();
  // Die with collrun, even if it is SIGKILLed.  If collrun already died
  // between fork and prctl, the parent is now someone else: give up.
  if (prctl(PR_SET_PDEATHSIG, SIGKILL) != 0) child_fail(status_fd, errno);
  if (getppid() != parent) _exit(127);

  if (!move_fd(req.stdin_fd, STDIN_FILENO) ||
      !move_fd(req.stdout_fd, STDOUT_FILENO) ||
      !move_fd(req.stderr_fd, STDERR_FILENO))
    child_fail(status_fd, errno);
  if (req.nofile != nullptr) setrlimit(RLIMIT_NOFILE, req.nofile);
  // A binding the kernel refuses (a cpuset changed under us) is not worth
  // failing the job for: the rank runs unbound and says so.
  if (req.cpus != nullptr && sched_setaffinity(0, sizeof(cpu_set_t), req.cpus) != 0) {
    static const char kMsg[] = "collrun: warning: cannot bind this rank to its core; it runs unbound\n";
    [[maybe_unused]] bool ok = write_all(STDERR_FILENO, kMsg, sizeof kMsg - 1);
  }

  execvpe(req.file, req.argv, req.envp);
  child_fail(status_fd, errno);
}

}  // namespace

SpawnResult spawn(const SpawnRequest& req) {
  SpawnResult res;
  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0) return res;
  pid_t parent = getpid();
  pid_t pid = fork();
  if (pid < 0) {
    int saved = errno;
    ::close(fds[0]);
    ::close(fds[1]);
    errno = saved;
    return res;
  }
  if (pid == 0) {
    ::close(fds[0]);
    child_main(req, parent, fds[1]);
  }
  ::close(fds[1]);
  res.pid = pid;
  res.status_fd = fds[0];
  return res;
}

int wait_exec(SpawnResult& child) {
  if (child.status_fd < 0) return 0;
  int err = 0;
  size_t got = 0;
  char* p = reinterpret_cast<char*>(&err);
  while (got < sizeof err) {
    ssize_t r = read_retry(child.status_fd, p + got, sizeof err - got);
    if (r <= 0) break;  // EOF: exec succeeded (the pipe closed on exec)
    got += static_cast<size_t>(r);
  }
  close_fd(child.status_fd);
  if (got == 0) return 0;
  return got == sizeof err ? err : EIO;
}

}  // namespace collrun
