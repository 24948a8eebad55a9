// bootstrap.h — a rank's side of the rendezvous: connect to the root, prove
// the secret, then all-gather rounds until init is done.
#pragma once

#include <string>
#include <vector>

#include "coll/base/socket.h"
#include "bootstrap/unique_id.h"
#include "coll/transport.h"

namespace coll::boot {

// Makes a fresh id for `root` and starts the root thread there.  With an
// empty address the root listens on loopback (single-host jobs).
Result<collUniqueId> createRoot(const std::string& address, const Secret& secret, int64_t timeoutMs);

class Bootstrap final : public transport::Exchange {
 public:
  // rootFrom: the launcher variables that named the root ("" when it came
  // from a unique id), for the hint to a rank that cannot reach it.
  static Result<std::unique_ptr<Bootstrap>> connect(const IdContents& id, int rank, int nranks, int64_t timeoutMs,
                                                    const std::string& rootFrom = "");
  ~Bootstrap() override;

  Status allGather(const void* mine, size_t bytes, std::vector<char>& out) override;
  Status barrier() override;
  // Ends this rank's session with the root (after init or on an error).
  // In the process that runs the root, it also waits (at most the timeout)
  // until the root has answered every rank: the process may exit next.
  void finish();

 private:
  Bootstrap() = default;
  Status readReply(const Deadline& deadline, std::vector<char>& data, bool* rootSaid);
  net::Socket sock_;
  Secret secret_{};
  int rank_ = -1;
  int nranks_ = 0;
  int64_t timeoutMs_ = 0;
};

}  // namespace coll::boot
