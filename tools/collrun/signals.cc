#include "signals.h"

#include <cerrno>
#include <fcntl.h>
#include <unistd.h>

#include "io_util.h"

namespace collrun {
namespace {

int g_write_fd = -1;

extern "C" void on_signal(int sig) {
  int saved = errno;
  unsigned char b = static_cast<unsigned char>(sig);
  // Non-blocking: if the pipe is full the loop has plenty to wake up for.
  [[maybe_unused]] ssize_t r = ::write(g_write_fd, &b, 1);
  errno = saved;
}

}  // namespace

bool SignalPipe::install() {
  int fds[2];
  if (pipe2(fds, O_CLOEXEC | O_NONBLOCK) != 0) return false;
  read_fd_ = fds[0];
  g_write_fd = fds[1];
  sigprocmask(SIG_SETMASK, nullptr, &original_mask_);

  int n = 0;
  for (int sig : kForwardedSignals) saved_sig_[n++] = sig;
  saved_sig_[n++] = SIGCHLD;
  saved_sig_[n++] = SIGPIPE;
  for (int k = 0; k < kNumSaved; ++k)
    if (sigaction(saved_sig_[k], nullptr, &saved_action_[k]) != 0) return false;

  struct sigaction sa {};
  sa.sa_handler = on_signal;
  sigemptyset(&sa.sa_mask);
  // No SA_RESTART: blocking calls return EINTR and every loop retries.
  sa.sa_flags = 0;
  for (int k = 0; k < kNumSaved - 2; ++k) {
    if (saved_action_[k].sa_handler == SIG_IGN) continue;
    if (sigaction(saved_sig_[k], &sa, nullptr) != 0) return false;
  }
  sa.sa_flags = SA_NOCLDSTOP;
  if (sigaction(SIGCHLD, &sa, nullptr) != 0) return false;

  struct sigaction ign {};
  ign.sa_handler = SIG_IGN;
  sigemptyset(&ign.sa_mask);
  if (sigaction(SIGPIPE, &ign, nullptr) != 0) return false;
  return true;
}

std::vector<int> SignalPipe::drain() {
  std::vector<int> out;
  unsigned char buf[256];
  for (;;) {
    ssize_t r = read_retry(read_fd_, buf, sizeof buf);
    if (r <= 0) break;  // EAGAIN: empty
    for (ssize_t k = 0; k < r; ++k) out.push_back(buf[k]);
  }
  return out;
}

void SignalPipe::block_all() {
  sigset_t all;
  sigfillset(&all);
  sigprocmask(SIG_SETMASK, &all, &saved_mask_);
}

void SignalPipe::unblock() { sigprocmask(SIG_SETMASK, &saved_mask_, nullptr); }

void SignalPipe::reset_in_child() const {
  for (int k = 0; k < kNumSaved; ++k)
    sigaction(saved_sig_[k], &saved_action_[k], nullptr);
  sigprocmask(SIG_SETMASK, &original_mask_, nullptr);
}

}  // namespace collrun
