#include "supervisor.h"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fcntl.h>
#include <memory>
#include <poll.h>
#include <stdexcept>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "binding.h"
#include "env.h"
#include "io_util.h"
#include "prefixer.h"
#include "signals.h"
#include "spawn.h"

namespace collrun {
namespace {

// Longest poll sleep; everything is event driven, this only bounds waits.
constexpr int kMaxPollMs = 1000;
// Once every rank has exited, how long to keep reading pipes that are still
// held open (by a rank's leftover background processes).
constexpr int64_t kDrainMs = 1000;
constexpr size_t kReadChunk = 64 * 1024;
// After SIGKILL, how long to wait for the kernel to let the ranks go (a rank
// stuck in uninterruptible sleep) before collrun gives up on them.
constexpr int64_t kReapAfterKillMs = 5000;

struct Stream {
  int fd = -1;
  std::unique_ptr<LinePrefixer> prefixer;
};

struct Rank {
  pid_t pid = -1;
  bool running = false;
  int exec_errno = 0;
  Stream out, err;
};

int64_t to_ms(double seconds) { return static_cast<int64_t>(std::llround(seconds * 1000.0)); }

std::string format_seconds(double s) {
  char buf[64];
  snprintf(buf, sizeof buf, "%g", s);
  return buf;
}

// "0-3,5,7-8"
std::string format_ranks(const std::vector<int>& ranks) {
  std::string out;
  for (size_t i = 0; i < ranks.size();) {
    size_t j = i;
    while (j + 1 < ranks.size() && ranks[j + 1] == ranks[j] + 1) ++j;
    if (!out.empty()) out += ',';
    out += std::to_string(ranks[i]);
    if (j > i) {
      // Appended piecewise: GCC 12 at -O3 warns (-Wrestrict, a false
      // positive) on `const char* + std::string&&`.
      out += j == i + 1 ? ',' : '-';
      out += std::to_string(ranks[j]);
    }
    i = j + 1;
  }
  return out;
}

class Job {
 public:
  Job(const Options& opts, const std::vector<std::string>& common_env,
      const std::string& secret)
      : opts_(opts), common_env_(common_env), secret_(secret),
        out_sink_(STDOUT_FILENO), err_sink_(STDERR_FILENO) {}

  ~Job() {
    for (Rank& r : ranks_) {
      close_fd(r.out.fd);
      close_fd(r.err.fd);
    }
    close_fd(devnull_);
  }

  int run();

 private:
  bool setup();
  bool raise_fd_limit();
  bool start_ranks();
  void loop();
  void handle_signals();
  void reap();
  void on_exit(int index, int status);
  bool read_stream(Stream& s);
  void drain_rank(Rank& r);
  void close_stream(Stream& s);
  void begin_termination();
  void check_deadlines(int64_t now);
  int poll_timeout(int64_t now) const;
  std::vector<int> running_ranks() const;

  const Options& opts_;
  const std::vector<std::string>& common_env_;
  const std::string& secret_;
  OutputSink out_sink_, err_sink_;
  SignalPipe signals_;
  std::vector<Rank> ranks_;
  int running_ = 0;
  int open_streams_ = 0;
  int devnull_ = -1;
  struct rlimit orig_nofile_ {};
  bool nofile_raised_ = false;

  int exit_code_ = 0;
  bool failed_ = false;        // first failure seen (exit_code_ is set)
  bool exec_reported_ = false;
  bool terminating_ = false;   // SIGTERM sent to the ranks
  bool killed_ = false;        // SIGKILL sent
  int64_t start_ms_ = 0;
  int64_t deadline_ms_ = -1;   // --timeout
  int64_t kill_ms_ = -1;       // SIGKILL after grace
  int64_t give_up_ms_ = -1;    // stop waiting for SIGKILLed ranks
  int64_t drain_ms_ = -1;      // stop reading pipes
};

bool Job::raise_fd_limit() {
  // Two pipes per rank while running, plus an exec-status pipe during start.
  rlim_t need = static_cast<rlim_t>(opts_.nranks) * 3 + 64;
  if (getrlimit(RLIMIT_NOFILE, &orig_nofile_) != 0) return true;
  if (orig_nofile_.rlim_cur != RLIM_INFINITY && orig_nofile_.rlim_cur < need) {
    struct rlimit raised = orig_nofile_;
    raised.rlim_cur = (orig_nofile_.rlim_max == RLIM_INFINITY || orig_nofile_.rlim_max > need)
                          ? need : orig_nofile_.rlim_max;
    if (raised.rlim_cur < need) {
      report("open file limit (" + std::to_string(orig_nofile_.rlim_max) +
             ") too low for " + std::to_string(opts_.nranks) + " ranks");
      return false;
    }
    if (setrlimit(RLIMIT_NOFILE, &raised) != 0) {
      report(std::string("cannot raise the open file limit: ") + std::strerror(errno));
      return false;
    }
    nofile_raised_ = true;
  }
  return true;
}

bool Job::setup() {
  if (!signals_.install()) {
    report(std::string("cannot install signal handlers: ") + std::strerror(errno));
    return false;
  }
  if (!raise_fd_limit()) return false;
  devnull_ = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
  if (devnull_ < 0) {
    report(std::string("cannot open /dev/null: ") + std::strerror(errno));
    return false;
  }
  ranks_.resize(static_cast<size_t>(opts_.nranks));
  return true;
}

bool Job::start_ranks() {
  std::vector<char*> argv;
  for (const std::string& a : opts_.command) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);

  std::string root;
  try {
    root = "127.0.0.1:" + std::to_string(pick_free_port());
  } catch (const std::exception& e) {
    report(e.what());
    return false;
  }

  // --bind core|share: the cores of collrun's own CPU set; none found (the
  // affinity cannot be read) leaves the ranks unbound.
  const std::vector<cpu_set_t> cores = opts_.bind != Options::Bind::kNone ? allowed_cores() : std::vector<cpu_set_t>{};
  const int ncores = static_cast<int>(cores.size());

  std::vector<SpawnResult> started(ranks_.size());
  bool ok = true;
  for (size_t i = 0; i < ranks_.size(); ++i) {
    Rank& r = ranks_[i];
    int out_pipe[2] = {-1, -1}, err_pipe[2] = {-1, -1};
    if (opts_.prefix) {
      if (pipe2(out_pipe, O_CLOEXEC) != 0 || pipe2(err_pipe, O_CLOEXEC) != 0) {
        report(std::string("cannot create pipes: ") + std::strerror(errno));
        close_fd(out_pipe[0]);
        close_fd(out_pipe[1]);
        ok = false;
        break;
      }
    }
    std::vector<std::string> env =
        rank_env(common_env_, static_cast<int>(i), opts_.nranks, root, secret_);
    std::vector<char*> envp;
    for (std::string& e : env) envp.push_back(e.data());
    envp.push_back(nullptr);

    SpawnRequest req;
    req.file = argv[0];
    req.argv = argv.data();
    req.envp = envp.data();
    req.stdin_fd = i == 0 ? -1 : devnull_;
    req.stdout_fd = out_pipe[1];
    req.stderr_fd = err_pipe[1];
    req.nofile = nofile_raised_ ? &orig_nofile_ : nullptr;
    req.signals = &signals_;
    const int rank = static_cast<int>(i);
    const CoreRange range = opts_.bind == Options::Bind::kShare ? cores_of_rank(rank, opts_.nranks, ncores)
                                                                : CoreRange{core_of_rank(rank, opts_.nranks, ncores), 1};
    cpu_set_t cpus;
    CPU_ZERO(&cpus);
    for (int c = range.first; c < range.first + range.count && c < ncores; ++c)
      CPU_OR(&cpus, &cpus, &cores[static_cast<size_t>(c)]);
    if (ncores > 0) req.cpus = &cpus;
    if (opts_.report_bindings) {
      std::string where = ncores > 0 ? "bound to " + describe_cores(range, cpus) : "not bound";
      report("rank " + std::to_string(i) + " " + where);
    }

    signals_.block_all();
    started[i] = spawn(req);
    int fork_errno = errno;
    signals_.unblock();

    close_fd(out_pipe[1]);
    close_fd(err_pipe[1]);
    if (started[i].pid < 0) {
      report(std::string("cannot start rank ") + std::to_string(i) + ": " +
             std::strerror(fork_errno));
      close_fd(out_pipe[0]);
      close_fd(err_pipe[0]);
      ok = false;
      break;
    }
    r.pid = started[i].pid;
    r.running = true;
    ++running_;
    if (opts_.prefix) {
      std::string prefix = rank_prefix(static_cast<int>(i), opts_.nranks);
      // Non-blocking reads, so a dead rank's pipes can be drained in one go.
      fcntl(out_pipe[0], F_SETFL, O_NONBLOCK);
      fcntl(err_pipe[0], F_SETFL, O_NONBLOCK);
      r.out.fd = out_pipe[0];
      r.out.prefixer = std::make_unique<LinePrefixer>(prefix, &out_sink_);
      r.err.fd = err_pipe[0];
      r.err.prefixer = std::make_unique<LinePrefixer>(prefix, &err_sink_);
      open_streams_ += 2;
    }
  }
  // Learn which execs worked; the failed ones are reported when reaped.
  for (size_t i = 0; i < ranks_.size(); ++i)
    if (started[i].pid > 0) ranks_[i].exec_errno = wait_exec(started[i]);
  return ok;
}

std::vector<int> Job::running_ranks() const {
  std::vector<int> out;
  for (size_t i = 0; i < ranks_.size(); ++i)
    if (ranks_[i].running) out.push_back(static_cast<int>(i));
  return out;
}

void Job::begin_termination() {
  if (terminating_) return;
  terminating_ = true;
  for (const Rank& r : ranks_)
    if (r.running) kill(r.pid, SIGTERM);
  kill_ms_ = now_ms() + to_ms(opts_.grace_s);
}

void Job::on_exit(int index, int status) {
  Rank& r = ranks_[static_cast<size_t>(index)];
  r.running = false;
  --running_;
  // Relay what the rank wrote last before saying why it ended.
  drain_rank(r);
  bool ok = WIFEXITED(status) && WEXITSTATUS(status) == 0;
  if (ok || failed_) return;
  failed_ = true;
  std::string who = "rank " + std::to_string(index) + " (pid " + std::to_string(r.pid) + ")";
  if (r.exec_errno != 0) {
    if (!exec_reported_)
      report("cannot execute '" + opts_.command[0] + "': " + std::strerror(r.exec_errno));
    exec_reported_ = true;
    exit_code_ = kExitCannotExec;
  } else if (WIFEXITED(status)) {
    exit_code_ = WEXITSTATUS(status);
    if (!terminating_) report(who + " exited with status " + std::to_string(exit_code_));
  } else if (WIFSIGNALED(status)) {
    int sig = WTERMSIG(status);
    exit_code_ = 128 + sig;
    if (!terminating_)
      report(who + " killed by signal " + std::to_string(sig) + " (" + signal_name(sig) + ")");
  } else {
    exit_code_ = kExitInternal;
  }
  if (running_ > 0 && !terminating_ && r.exec_errno == 0)
    report("terminating the remaining " + std::to_string(running_) + " rank(s)");
  begin_termination();
}

void Job::reap() {
  while (running_ > 0) {
    int status = 0;
    pid_t pid = waitpid(-1, &status, WNOHANG);
    if (pid < 0 && errno == EINTR) continue;
    if (pid <= 0) return;
    for (size_t i = 0; i < ranks_.size(); ++i) {
      if (ranks_[i].running && ranks_[i].pid == pid) {
        on_exit(static_cast<int>(i), status);
        break;
      }
    }
  }
}

void Job::handle_signals() {
  for (int sig : signals_.drain()) {
    if (sig == SIGCHLD) continue;  // reap() runs every iteration
    for (const Rank& r : ranks_)
      if (r.running) kill(r.pid, sig);
  }
}

void Job::close_stream(Stream& s) {
  if (s.fd < 0) return;
  s.prefixer->finish();
  close_fd(s.fd);
  --open_streams_;
}

// One read; false when there is nothing more to read right now.
bool Job::read_stream(Stream& s) {
  static char buf[kReadChunk];
  if (s.fd < 0) return false;
  ssize_t n = read_retry(s.fd, buf, sizeof buf);
  if (n > 0) {
    s.prefixer->feed(buf, static_cast<size_t>(n));
    return true;
  }
  if (n == 0 || (errno != EAGAIN && errno != EWOULDBLOCK)) close_stream(s);
  return false;
}

void Job::drain_rank(Rank& r) {
  // Bounded: a background child of the rank may still be writing.
  for (int k = 0; k < 64 && read_stream(r.out); ++k) {
  }
  for (int k = 0; k < 64 && read_stream(r.err); ++k) {
  }
}

void Job::check_deadlines(int64_t now) {
  if (deadline_ms_ >= 0 && now >= deadline_ms_ && running_ > 0 && !terminating_) {
    std::vector<int> left = running_ranks();
    report("timeout: " + format_seconds(opts_.timeout_s) + " s elapsed; " +
           std::to_string(left.size()) + " of " + std::to_string(opts_.nranks) +
           " rank(s) still running: " + format_ranks(left));
    exit_code_ = kExitTimeout;
    failed_ = true;  // later exits are consequences, not causes
    begin_termination();
  }
  if (deadline_ms_ >= 0 && now >= deadline_ms_) deadline_ms_ = -1;
  if (terminating_ && !killed_ && now >= kill_ms_ && running_ > 0) {
    report(std::to_string(running_) + " rank(s) still running " +
           format_seconds(opts_.grace_s) + " s after SIGTERM: " +
           format_ranks(running_ranks()) + "; sending SIGKILL");
    killed_ = true;
    give_up_ms_ = now + kReapAfterKillMs;
    for (const Rank& r : ranks_)
      if (r.running) kill(r.pid, SIGKILL);
  }
}

int Job::poll_timeout(int64_t now) const {
  int64_t wait = kMaxPollMs;
  auto until = [&](int64_t t) {
    if (t >= 0) wait = std::min(wait, std::max<int64_t>(0, t - now));
  };
  if (running_ > 0) {
    until(deadline_ms_);
    if (terminating_ && !killed_) until(kill_ms_);
    if (killed_) until(give_up_ms_);
  } else {
    until(drain_ms_);
  }
  return static_cast<int>(wait);
}

void Job::loop() {
  std::vector<pollfd> fds;
  std::vector<Stream*> owners;
  for (;;) {
    reap();
    int64_t now = now_ms();
    check_deadlines(now);
    if (killed_ && running_ > 0 && now >= give_up_ms_) {
      report("giving up on rank(s) " + format_ranks(running_ranks()) +
             ": still not gone after SIGKILL");
      for (Rank& r : ranks_) {
        close_stream(r.out);
        close_stream(r.err);
      }
      return;
    }
    if (running_ == 0) {
      if (open_streams_ == 0) return;
      if (drain_ms_ < 0) drain_ms_ = now + kDrainMs;
      if (now >= drain_ms_) {
        for (Rank& r : ranks_) {
          close_stream(r.out);
          close_stream(r.err);
        }
        return;
      }
    }

    fds.clear();
    owners.clear();
    fds.push_back({signals_.fd(), POLLIN, 0});
    owners.push_back(nullptr);
    for (Rank& r : ranks_) {
      for (Stream* s : {&r.out, &r.err}) {
        if (s->fd < 0) continue;
        fds.push_back({s->fd, POLLIN, 0});
        owners.push_back(s);
      }
    }
    int n = poll(fds.data(), fds.size(), poll_timeout(now));
    if (n < 0) {
      if (errno == EINTR) continue;
      report(std::string("poll: ") + std::strerror(errno));
      exit_code_ = kExitInternal;
      failed_ = true;
      begin_termination();
      continue;
    }
    if (fds[0].revents != 0) handle_signals();
    for (size_t k = 1; k < fds.size(); ++k)
      if (fds[k].revents != 0) read_stream(*owners[k]);
  }
}

int Job::run() {
  if (!setup()) return kExitInternal;
  start_ms_ = now_ms();
  if (opts_.timeout_s > 0) deadline_ms_ = start_ms_ + to_ms(opts_.timeout_s);
  if (!start_ranks()) {
    // Could not start all ranks: stop the ones that did.
    exit_code_ = kExitInternal;
    failed_ = true;
    begin_termination();
  }
  loop();
  return exit_code_;
}

}  // namespace

int run_job(const Options& opts, const std::vector<std::string>& common_env,
            const std::string& secret) {
  Job job(opts, common_env, secret);
  return job.run();
}

}  // namespace collrun
