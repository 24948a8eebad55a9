// Black-box tests of collrun: run the binary on small shell scripts and check
// environment, output prefixing, exit statuses, signals and timeouts.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <poll.h>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>
#include <vector>

#ifndef COLLRUN_PATH
#error "COLLRUN_PATH must name the collrun binary"
#endif

extern char** environ;

namespace {

using Clock = std::chrono::steady_clock;

struct Result {
  int status = 0;     // raw wait status
  int code = -1;      // exit code, or -1 if collrun was killed
  std::string out, err;
  double seconds = 0;
};

// collrun started with stdout/stderr on pipes and stdin on /dev/null.
class Proc {
 public:
  // env: "NAME=VALUE" added to (or replacing in) the test's environment.
  explicit Proc(const std::vector<std::string>& args,
                const std::vector<std::string>& env = {}) {
    std::vector<std::string> argv_s = {COLLRUN_PATH};
    argv_s.insert(argv_s.end(), args.begin(), args.end());
    std::vector<std::string> env_s;
    for (char** e = environ; *e != nullptr; ++e) {
      std::string entry = *e;
      std::string name = entry.substr(0, entry.find('='));
      bool replaced = false;
      for (const std::string& x : env)
        if (x.substr(0, x.find('=')) == name) replaced = true;
      if (!replaced) env_s.push_back(entry);
    }
    env_s.insert(env_s.end(), env.begin(), env.end());
    std::vector<char*> argv, envp;
    for (std::string& s : argv_s) argv.push_back(s.data());
    argv.push_back(nullptr);
    for (std::string& s : env_s) envp.push_back(s.data());
    envp.push_back(nullptr);

    int out[2], err[2];
    REQUIRE(pipe2(out, O_CLOEXEC) == 0);
    REQUIRE(pipe2(err, O_CLOEXEC) == 0);
    start_ = Clock::now();
    pid_ = fork();
    REQUIRE(pid_ >= 0);
    if (pid_ == 0) {
      int devnull = open("/dev/null", O_RDONLY);
      dup2(devnull, 0);
      dup2(out[1], 1);
      dup2(err[1], 2);
      execve(argv[0], argv.data(), envp.data());
      _exit(99);
    }
    close(out[1]);
    close(err[1]);
    out_fd_ = out[0];
    err_fd_ = err[0];
  }

  ~Proc() {
    if (pid_ > 0) {
      kill(pid_, SIGKILL);
      waitpid(pid_, nullptr, 0);
    }
    if (out_fd_ >= 0) close(out_fd_);
    if (err_fd_ >= 0) close(err_fd_);
  }

  pid_t pid() const { return pid_; }

  // Collects all output and the exit status; fails the test (after killing
  // collrun) if that takes longer than limit_s.
  Result finish(double limit_s = 15) {
    Result r;
    auto deadline = start_ + std::chrono::duration<double>(limit_s);
    bool timed_out = false;
    while (out_fd_ >= 0 || err_fd_ >= 0) {
      pollfd fds[2];
      int n = 0;
      int* owners[2];
      std::string* sinks[2];
      if (out_fd_ >= 0) { fds[n] = {out_fd_, POLLIN, 0}; owners[n] = &out_fd_; sinks[n++] = &r.out; }
      if (err_fd_ >= 0) { fds[n] = {err_fd_, POLLIN, 0}; owners[n] = &err_fd_; sinks[n++] = &r.err; }
      auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
      if (left <= 0) { timed_out = true; break; }
      int p = poll(fds, static_cast<nfds_t>(n), static_cast<int>(left));
      if (p < 0 && errno == EINTR) continue;
      REQUIRE(p >= 0);
      for (int k = 0; k < n; ++k) {
        if (fds[k].revents == 0) continue;
        char buf[65536];
        ssize_t got = read(*owners[k], buf, sizeof buf);
        if (got > 0) {
          sinks[k]->append(buf, static_cast<size_t>(got));
        } else if (got == 0 || errno != EINTR) {
          close(*owners[k]);
          *owners[k] = -1;
        }
      }
    }
    if (timed_out) kill(pid_, SIGKILL);
    while (waitpid(pid_, &r.status, 0) < 0 && errno == EINTR) {
    }
    pid_ = -1;
    r.seconds = std::chrono::duration<double>(Clock::now() - start_).count();
    r.code = WIFEXITED(r.status) ? WEXITSTATUS(r.status) : -1;
    INFO("collrun stdout:\n" << r.out << "\ncollrun stderr:\n" << r.err);
    REQUIRE_FALSE(timed_out);
    return r;
  }

 private:
  pid_t pid_ = -1;
  int out_fd_ = -1, err_fd_ = -1;
  Clock::time_point start_;
};

Result run(const std::vector<std::string>& args, const std::vector<std::string>& env = {}) {
  Proc p(args, env);
  return p.finish();
}

// collrun -n N [extra...] /bin/sh -c SCRIPT
Result run_sh(int n, const std::string& script, std::vector<std::string> extra = {},
              const std::vector<std::string>& env = {}) {
  std::vector<std::string> args = {"-n", std::to_string(n)};
  args.insert(args.end(), extra.begin(), extra.end());
  args.insert(args.end(), {"--", "/bin/sh", "-c", script});
  return run(args, env);
}

std::vector<std::string> lines_of(const std::string& s) {
  std::vector<std::string> out;
  std::string line;
  std::istringstream in(s);
  while (std::getline(in, line)) out.push_back(line);
  return out;
}

bool contains(const std::string& hay, const std::string& needle) {
  return hay.find(needle) != std::string::npos;
}

class TempDir {
 public:
  TempDir() {
    char tmpl[] = "/tmp/collrun_test.XXXXXX";
    REQUIRE(mkdtemp(tmpl) != nullptr);
    path_ = tmpl;
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  const std::string& path() const { return path_; }
  std::string file(const std::string& name) const { return path_ + "/" + name; }

 private:
  std::string path_;
};

bool wait_for_files(const std::vector<std::string>& files, double limit_s) {
  auto deadline = Clock::now() + std::chrono::duration<double>(limit_s);
  for (;;) {
    bool all = true;
    for (const std::string& f : files)
      if (!std::filesystem::exists(f)) all = false;
    if (all) return true;
    if (Clock::now() > deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
}

std::string slurp(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// Gone, or a zombie nobody has reaped yet.
bool process_dead(pid_t pid) {
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  if (!stat) return true;
  std::string content((std::istreambuf_iterator<char>(stat)), std::istreambuf_iterator<char>());
  size_t close_paren = content.rfind(')');
  return close_paren != std::string::npos && close_paren + 2 < content.size() &&
         (content[close_paren + 2] == 'Z' || content[close_paren + 2] == 'X');
}

struct EnvLine {
  int prefix_rank, rank, nranks, local_rank, local_nranks;
  std::string root, secret;
};

std::vector<EnvLine> run_env_job(int n, const std::vector<std::string>& env = {}) {
  Result r = run_sh(n,
                    "echo \"R=$COLL_RANK N=$COLL_NRANKS L=$COLL_LOCAL_RANK "
                    "LN=$COLL_LOCAL_NRANKS ROOT=$COLL_ROOT S=$COLL_SECRET "
                    "P=$COLLRUN_TEST_PASS\"",
                    {}, env);
  INFO(r.out << r.err);
  REQUIRE(r.code == 0);
  std::regex re(R"(^\[ *(\d+)\] R=(\d+) N=(\d+) L=(\d+) LN=(\d+) ROOT=(\S*) S=(\S*) P=through$)");
  std::vector<EnvLine> out;
  for (const std::string& line : lines_of(r.out)) {
    std::smatch m;
    INFO("line: " << line);
    REQUIRE(std::regex_match(line, m, re));
    out.push_back({std::stoi(m[1]), std::stoi(m[2]), std::stoi(m[3]), std::stoi(m[4]),
                   std::stoi(m[5]), m[6], m[7]});
  }
  REQUIRE(out.size() == static_cast<size_t>(n));
  return out;
}

}  // namespace

TEST_CASE("collrun gives each rank its COLL_* environment", "[collrun]") {
  const int n = 16;
  // Values already in collrun's environment must be replaced, others kept.
  std::vector<std::string> env = {"COLL_ROOT=10.9.8.7:1", "COLL_SECRET=stale",
                                  "COLL_RANK=77", "COLLRUN_TEST_PASS=through"};
  std::vector<EnvLine> job1 = run_env_job(n, env);
  std::set<int> ranks;
  for (const EnvLine& e : job1) {
    CHECK(e.prefix_rank == e.rank);
    CHECK(e.nranks == n);
    CHECK(e.local_rank == e.rank);
    CHECK(e.local_nranks == n);
    CHECK(e.root == job1[0].root);
    CHECK(e.secret == job1[0].secret);
    ranks.insert(e.rank);
  }
  CHECK(ranks.size() == static_cast<size_t>(n));
  CHECK(*ranks.begin() == 0);
  CHECK(*ranks.rbegin() == n - 1);

  std::smatch m;
  REQUIRE(std::regex_match(job1[0].root, m, std::regex(R"(127\.0\.0\.1:(\d+))")));
  int port = std::stoi(m[1]);
  CHECK(port > 0);
  CHECK(port < 65536);
  CHECK(std::regex_match(job1[0].secret, std::regex("[0-9a-f]{32}")));

  std::vector<EnvLine> job2 = run_env_job(2, env);
  CHECK(job2[0].secret != job1[0].secret);
  CHECK(std::regex_match(job2[0].secret, std::regex("[0-9a-f]{32}")));
}

TEST_CASE("collrun pads the rank prefix to the width of N-1", "[collrun]") {
  Result r = run_sh(128, "echo x");
  REQUIRE(r.code == 0);
  std::vector<std::string> lines = lines_of(r.out);
  REQUIRE(lines.size() == 128);
  std::set<std::string> want, got(lines.begin(), lines.end());
  for (int i = 0; i < 128; ++i) {
    char buf[32];
    snprintf(buf, sizeof buf, "[%3d] x", i);
    want.insert(buf);
  }
  CHECK(got == want);

  Result one = run_sh(1, "echo solo");
  CHECK(one.code == 0);
  CHECK(one.out == "[0] solo\n");
}

TEST_CASE("collrun prefixes every line and never interleaves lines", "[collrun]") {
  const int n = 4, out_lines = 2000, err_lines = 500;
  // Each line: "R<rank>:<5-digit index>:" padded with 'x' to 100 characters.
  // dash's printf builtin writes each line with its own write(2).
  std::string pad(100 - 9, 'x');
  std::string script =
      "i=0; while [ $i -lt " + std::to_string(out_lines) + " ]; do "
      "printf 'R%d:%05d:" + pad + "\\n' $COLL_RANK $i; "
      "if [ $i -lt " + std::to_string(err_lines) + " ]; then "
      "printf 'E%d:%05d\\n' $COLL_RANK $i >&2; fi; "
      "i=$((i+1)); done; printf 'tail-%d' $COLL_RANK; printf 'etail' >&2";
  Result r = run_sh(n, script);
  REQUIRE(r.code == 0);
  REQUIRE(!r.out.empty());
  CHECK(r.out.back() == '\n');

  std::regex out_re(R"(^\[(\d)\] R(\d):(\d{5}):x{91}$)");
  std::regex tail_re(R"(^\[(\d)\] tail-(\d)$)");
  std::map<int, int> next;  // rank -> next expected line index
  std::map<int, int> tails;
  size_t bad = 0;
  for (const std::string& line : lines_of(r.out)) {
    std::smatch m;
    if (std::regex_match(line, m, out_re) && m[1] == m[2]) {
      int rank = std::stoi(m[1]);
      if (std::stoi(m[3]) != next[rank]) ++bad;  // lost or reordered
      next[rank] = std::stoi(m[3]) + 1;
    } else if (std::regex_match(line, m, tail_re) && m[1] == m[2]) {
      tails[std::stoi(m[1])]++;
      if (next[std::stoi(m[1])] != out_lines) ++bad;  // tail must come last
    } else {
      if (bad < 5) UNSCOPED_INFO("bad stdout line: '" << line << "'");
      ++bad;
    }
  }
  CHECK(bad == 0);
  for (int i = 0; i < n; ++i) {
    CHECK(next[i] == out_lines);
    CHECK(tails[i] == 1);
  }

  std::regex err_re(R"(^\[(\d)\] E(\d):(\d{5})$)");
  std::map<int, int> err_next, etails;
  size_t bad_err = 0;
  for (const std::string& line : lines_of(r.err)) {
    std::smatch m;
    if (std::regex_match(line, m, err_re) && m[1] == m[2]) {
      int rank = std::stoi(m[1]);
      if (std::stoi(m[3]) != err_next[rank]) ++bad_err;
      err_next[rank] = std::stoi(m[3]) + 1;
    } else if (std::regex_match(line, m, std::regex(R"(^\[(\d)\] etail$)"))) {
      etails[std::stoi(m[1])]++;
    } else {
      ++bad_err;
    }
  }
  CHECK(bad_err == 0);
  for (int i = 0; i < n; ++i) {
    CHECK(err_next[i] == err_lines);
    CHECK(etails[i] == 1);
  }
}

TEST_CASE("collrun --no-prefix passes output through untouched", "[collrun]") {
  Result r = run_sh(2, "printf 'raw-%d' $COLL_RANK; echo oops >&2", {"--no-prefix"});
  CHECK(r.code == 0);
  CHECK(((r.out == "raw-0raw-1") || (r.out == "raw-1raw-0")));
  CHECK(r.err == "oops\noops\n");
}

TEST_CASE("collrun propagates a failing rank's exit status", "[collrun]") {
  Result r = run_sh(3, "if [ $COLL_RANK = 1 ]; then echo last words; exit 3; fi; exec sleep 1000");
  INFO(r.out << r.err);
  CHECK(r.code == 3);
  CHECK(std::regex_search(r.err, std::regex(R"(collrun: rank 1 \(pid \d+\) exited with status 3)")));
  CHECK(contains(r.out, "[1] last words\n"));
  CHECK(r.seconds < 2.5);  // the sleepers were stopped, not waited for
}

TEST_CASE("collrun reports a rank killed by a signal", "[collrun]") {
  Result r = run_sh(2, "if [ $COLL_RANK = 0 ]; then kill -KILL $$; fi; exec sleep 1000");
  INFO(r.err);
  CHECK(r.code == 128 + SIGKILL);
  CHECK(std::regex_search(r.err, std::regex(R"(collrun: rank 0 \(pid \d+\) killed by signal 9 \(SIGKILL\))")));
  CHECK(r.seconds < 2.5);
}

TEST_CASE("collrun SIGKILLs ranks that ignore SIGTERM after --grace", "[collrun]") {
  Result r = run_sh(2, "if [ $COLL_RANK = 0 ]; then sleep 0.2; exit 5; fi; trap '' TERM; exec sleep 1000",
                    {"--grace", "0.5"});
  INFO(r.err);
  CHECK(r.code == 5);
  CHECK(r.seconds >= 0.6);
  CHECK(r.seconds < 3);
  CHECK(contains(r.err, "sending SIGKILL"));
}

TEST_CASE("collrun --timeout stops the job with status 124", "[collrun]") {
  Result r = run_sh(3, "if [ $COLL_RANK = 1 ]; then exit 0; fi; exec sleep 1000", {"--timeout", "0.5"});
  INFO(r.err);
  CHECK(r.code == 124);
  CHECK(contains(r.err, "timeout"));
  CHECK(contains(r.err, "still running: 0,2"));
  CHECK(r.seconds >= 0.45);
  CHECK(r.seconds < 3);

  Result fast = run_sh(2, "exit 0", {"--timeout", "10"});
  CHECK(fast.code == 0);
  CHECK(fast.seconds < 3);
}

TEST_CASE("collrun reports a program that cannot be executed", "[collrun]") {
  Result r = run({"-n", "2", "/nonexistent/collrun-prog"});
  CHECK(r.code == 127);
  CHECK(r.err == "collrun: cannot execute '/nonexistent/collrun-prog': No such file or directory\n");

  Result path = run({"-n", "1", "collrun-no-such-program-in-path", "arg"});
  CHECK(path.code == 127);
  CHECK(contains(path.err, "cannot execute 'collrun-no-such-program-in-path': No such file or directory"));

  TempDir dir;
  std::ofstream(dir.file("noexec")) << "#!/bin/sh\nexit 0\n";
  Result perm = run({"-n", "1", dir.file("noexec")});
  CHECK(perm.code == 127);
  CHECK(contains(perm.err, "Permission denied"));
}

TEST_CASE("collrun forwards signals to all ranks", "[collrun]") {
  struct Case { int sig; const char* name; };
  for (Case c : {Case{SIGTERM, "TERM"}, Case{SIGINT, "INT"}, Case{SIGHUP, "HUP"}, Case{SIGQUIT, "QUIT"}}) {
    DYNAMIC_SECTION("SIG" << c.name) {
      TempDir dir;
      std::string d = dir.path();
      std::string script = "trap 'echo $COLL_RANK > " + d + "/got.$COLL_RANK; exit 0' " + c.name +
                           "; touch " + d + "/ready.$COLL_RANK; while :; do sleep 0.02; done";
      Proc p({"-n", "2", "--timeout", "10", "/bin/sh", "-c", script});
      REQUIRE(wait_for_files({dir.file("ready.0"), dir.file("ready.1")}, 5));
      REQUIRE(kill(p.pid(), c.sig) == 0);
      Result r = p.finish();
      INFO(r.err);
      CHECK(r.code == 0);  // the ranks handled it and exited 0
      CHECK(slurp(dir.file("got.0")) == "0\n");
      CHECK(slurp(dir.file("got.1")) == "1\n");
      CHECK(r.seconds < 5);
    }
  }
}

TEST_CASE("ranks die when collrun is SIGKILLed", "[collrun]") {
  TempDir dir;
  std::string script = "echo $$ > " + dir.path() + "/pid.tmp.$COLL_RANK; mv " + dir.path() +
                       "/pid.tmp.$COLL_RANK " + dir.path() + "/pid.$COLL_RANK; exec sleep 1000";
  Proc p({"-n", "2", "/bin/sh", "-c", script});
  REQUIRE(wait_for_files({dir.file("pid.0"), dir.file("pid.1")}, 5));
  pid_t pids[2] = {std::stoi(slurp(dir.file("pid.0"))), std::stoi(slurp(dir.file("pid.1")))};
  // Give sh a moment to exec sleep; it keeps the pid.
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  CHECK_FALSE(process_dead(pids[0]));
  CHECK_FALSE(process_dead(pids[1]));
  REQUIRE(kill(p.pid(), SIGKILL) == 0);
  Result r = p.finish();
  CHECK(WIFSIGNALED(r.status));
  auto deadline = Clock::now() + std::chrono::seconds(3);
  while (!(process_dead(pids[0]) && process_dead(pids[1])) && Clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  CHECK(process_dead(pids[0]));
  CHECK(process_dead(pids[1]));
  for (pid_t pid : pids)
    if (!process_dead(pid)) kill(pid, SIGKILL);  // do not leak on failure
}

TEST_CASE("collrun -x sets extra variables for all ranks", "[collrun]") {
  Result r = run_sh(2, "echo \"$COLLRUN_X1|$COLLRUN_X2|${COLLRUN_X3-unset}|$COLLRUN_X4\"",
                    {"-x", "COLLRUN_X1=a b", "-x", "COLLRUN_X2=first", "-x", "COLLRUN_X2=second",
                     "-x", "COLLRUN_X3=", "-xCOLLRUN_X4=x=y"},
                    {"COLLRUN_X1=from-parent"});
  INFO(r.err);
  CHECK(r.code == 0);
  std::vector<std::string> lines = lines_of(r.out);
  std::sort(lines.begin(), lines.end());
  CHECK(lines == std::vector<std::string>{"[0] a b|second||x=y", "[1] a b|second||x=y"});
}

TEST_CASE("collrun rejects bad arguments with a usage error", "[collrun]") {
  const std::vector<std::vector<std::string>> bad = {
      {},
      {"/bin/true"},                       // no -n
      {"-n", "2"},                         // no PROG
      {"-n"},                              // -n without value
      {"-n", "0", "/bin/true"},
      {"-n", "1025", "/bin/true"},
      {"-n", "abc", "/bin/true"},
      {"-n", "2x", "/bin/true"},
      {"-n", "2", "--bogus", "/bin/true"},
      {"-n", "2", "-x", "NOEQUALS", "/bin/true"},
      {"-n", "2", "-x", "1BAD=v", "/bin/true"},
      {"-n", "2", "-x", "COLL_RANK=3", "/bin/true"},
      {"-n", "2", "--timeout", "-1", "/bin/true"},
      {"-n", "2", "--timeout", "0", "/bin/true"},
      {"-n", "2", "--grace", "soon", "/bin/true"},
  };
  for (const auto& args : bad) {
    std::string joined;
    for (const auto& a : args) joined += "'" + a + "' ";
    INFO("args: " << joined);
    Result r = run(args);
    CHECK(r.code == 2);
    CHECK(contains(r.err, "Usage: collrun"));
    CHECK(r.out.empty());
  }

  for (const char* flag : {"-h", "--help"}) {
    Result h = run({flag});
    CHECK(h.code == 0);
    CHECK(contains(h.out, "Usage: collrun -n N"));
    CHECK(contains(h.out, "--timeout"));
  }

  // Options after PROG belong to PROG.
  Result r = run({"-n", "1", "/bin/sh", "-c", "echo \"$0 $1\"", "-n", "--bogus"});
  CHECK(r.code == 0);
  CHECK(r.out == "[0] -n --bogus\n");
  Result eq = run({"--nranks=2", "--timeout=5", "--grace=1", "--", "/bin/true"});
  CHECK(eq.code == 0);
}
