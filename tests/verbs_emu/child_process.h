// A second process for the multi-process tests: fork, two pipes between
// parent and child.  The child runs a function (no Catch2 there: it reports
// by exit status and messages on stderr) and exits.
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <functional>

namespace verbs_emu_test {

// Pipe ends of one side.
struct Channel {
  int in = -1;
  int out = -1;
  bool send(const void* data, size_t n);
  // false when the other side closed or seconds passed.
  bool recv(void* data, size_t n, double seconds = 20);
  template <class T>
  bool sendValue(const T& v) {
    return send(&v, sizeof(v));
  }
  template <class T>
  bool recvValue(T* v, double seconds = 20) {
    return recv(v, sizeof(*v), seconds);
  }
};

class ChildProcess {
 public:
  explicit ChildProcess(const std::function<int(Channel&)>& body);
  ~ChildProcess();
  ChildProcess(const ChildProcess&) = delete;
  ChildProcess& operator=(const ChildProcess&) = delete;
  Channel& channel() { return ch_; }
  // The exit status (128 + signal when killed); waits at most 30 s.
  int wait();
  void kill(int sig);

 private:
  pid_t pid_ = -1;
  Channel ch_;
  int status_ = -1;
};

// Fails the child with a message (returns 1 from its body).
#define CHILD_CHECK(cond)                                                                          \
  do {                                                                                             \
    if (!(cond)) {                                                                                 \
      std::fprintf(stderr, "child %d: %s:%d: CHILD_CHECK(%s) failed\n", getpid(), __FILE__, __LINE__, \
                   #cond);                                                                         \
      return 1;                                                                                    \
    }                                                                                              \
  } while (0)

}  // namespace verbs_emu_test
