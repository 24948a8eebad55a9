// Signal handling through a self-pipe: the handlers only write the signal
// number to a non-blocking pipe that the supervisor's poll loop reads.
#pragma once

#include <csignal>
#include <vector>

namespace collrun {

// The signals collrun forwards to all ranks.
inline constexpr int kForwardedSignals[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT};

class SignalPipe {
 public:
  // Installs handlers for the forwarded signals (except those collrun was
  // started with ignored, e.g. SIGHUP under nohup: they stay ignored) and
  // SIGCHLD, ignores SIGPIPE, and remembers the mask and dispositions collrun
  // started with.  Call once.  Returns false (errno set) on failure.
  bool install();

  // Read end, to poll for POLLIN.
  int fd() const { return read_fd_; }

  // Signals received since the last call, in arrival order (SIGCHLD
  // included).  Never blocks.
  std::vector<int> drain();

  // Blocks all signals (around fork) and puts back the previous mask.
  void block_all();
  void unblock();

  // In a freshly forked child (signals blocked): restores the dispositions
  // and the mask collrun started with.  Async-signal-safe.
  void reset_in_child() const;

 private:
  int read_fd_ = -1;
  static constexpr int kNumSaved = 6;  // forwarded + SIGCHLD + SIGPIPE
  int saved_sig_[kNumSaved] = {};
  struct sigaction saved_action_[kNumSaved] = {};
  sigset_t original_mask_{};
  sigset_t saved_mask_{};
};

}  // namespace collrun
