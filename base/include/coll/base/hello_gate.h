// hello_gate.h — accept connections and read their fixed-size first
// message (the hello that proves the job secret) many at a time.
//
// Reading hellos one connection after another let a stranger that connects
// and says nothing hold up every rank behind it for its whole hello
// deadline; a few hundred such strangers outlasted COLL_TIMEOUT.  The gate
// polls the listener and every pending connection together: each pending
// connection has its own deadline, and nothing it does delays the others.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "coll/base/socket.h"
#include "coll/base/clock.h"
#include "coll/base/status.h"

namespace coll::net {

class HelloGate {
 public:
  struct Arrival {
    Socket socket;
    std::vector<char> hello;  // exactly helloBytes
  };

  // Borrows `listener` (it must outlive the gate).  helloMs: how long one
  // connection may take to send its hello; maxPending bounds memory and
  // descriptors under a flood (the oldest pending connection goes first).
  HelloGate(const Socket& listener, size_t helloBytes, int64_t helloMs, size_t maxPending = 256);

  // The next connection whose hello is complete, or collTimeout at the
  // deadline.  Connections that close, fail, or miss their own deadline are
  // dropped; why is kept for the caller's log (takeDropped).
  Result<Arrival> next(const Deadline& deadline);
  std::vector<std::string> takeDropped();

 private:
  struct Pending {
    Socket socket;
    std::vector<char> buf;
    size_t got = 0;
    int64_t deadlineNs = 0;
  };
  void drop(size_t i, const std::string& why);

  const Socket& listener_;
  size_t helloBytes_;
  int64_t helloMs_;
  size_t maxPending_;
  std::vector<Pending> pending_;
  std::vector<std::string> dropped_;
};

}  // namespace coll::net
