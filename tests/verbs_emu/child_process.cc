#include "child_process.h"

#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <thread>

namespace verbs_emu_test {

bool Channel::send(const void* data, size_t n) {
  const auto* p = static_cast<const char*>(data);
  while (n > 0) {
    const ssize_t w = write(out, p, n);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return false;
    p += w;
    n -= static_cast<size_t>(w);
  }
  return true;
}

bool Channel::recv(void* data, size_t n, double seconds) {
  auto* p = static_cast<char*>(data);
  const auto end = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
  while (n > 0) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(end - std::chrono::steady_clock::now());
    if (left.count() <= 0) return false;
    pollfd pfd{in, POLLIN, 0};
    if (poll(&pfd, 1, static_cast<int>(left.count())) <= 0) continue;
    const ssize_t r = read(in, p, n);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) return false;
    p += r;
    n -= static_cast<size_t>(r);
  }
  return true;
}

ChildProcess::ChildProcess(const std::function<int(Channel&)>& body) {
  int down[2], up[2];
  if (pipe(down) != 0 || pipe(up) != 0) return;
  pid_ = fork();
  if (pid_ == 0) {
    close(down[1]);
    close(up[0]);
    Channel ch{down[0], up[1]};
    _exit(body(ch));
  }
  close(down[0]);
  close(up[1]);
  ch_ = Channel{up[0], down[1]};
}

ChildProcess::~ChildProcess() {
  if (pid_ > 0 && status_ < 0) {
    ::kill(pid_, SIGKILL);
    wait();
  }
  if (ch_.in >= 0) close(ch_.in);
  if (ch_.out >= 0) close(ch_.out);
}

int ChildProcess::wait() {
  if (status_ >= 0 || pid_ <= 0) return status_;
  const auto end = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  int st = 0;
  while (waitpid(pid_, &st, WNOHANG) == 0) {
    if (std::chrono::steady_clock::now() > end) {
      ::kill(pid_, SIGKILL);
      waitpid(pid_, &st, 0);
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  status_ = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
  return status_;
}

void ChildProcess::kill(int sig) {
  if (pid_ > 0) ::kill(pid_, sig);
}

}  // namespace verbs_emu_test
