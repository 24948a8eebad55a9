#include "bootstrap/root.h"

#include <poll.h>

#include <cstring>
#include <exception>
#include <string>
#include <thread>
#include <vector>

#include "bootstrap/protocol.h"
#include "net/hello_gate.h"
#include "util/log.h"

namespace coll::boot {
namespace {

class Root {
 public:
  Root(net::Socket listener, const Secret& secret, int64_t timeoutMs)
      : listener_(std::move(listener)), secret_(secret), timeoutMs_(timeoutMs) {}

  void run() {
    Status s = gather();
    if (s.isOk()) s = serveRounds();
    if (!s.isOk()) {
      COLL_LOG(Warn, kBoot, -1, "bootstrap root: {}", s.message());
      failAll(s);
    }
  }

 private:
  // Accepts until every rank has said Hello or the deadline passes.
  Status gather() {
    Deadline deadline = Deadline::afterMs(timeoutMs_);
    int arrived = 0;
    // A stranger gets at most 2 s to identify itself, and never delays the
    // ranks that connect beside it (net::HelloGate reads hellos in parallel).
    net::HelloGate gate(listener_, sizeof(Hello), 2000);
    for (;;) {
      if (nranks_ > 0 && arrived == nranks_) return Status::ok();
      auto conn = gate.next(deadline);
      for (const std::string& why : gate.takeDropped())
        COLL_LOG(Warn, kBoot, -1, "bootstrap root: dropped a connection that sent no complete hello: {}", why);
      if (!conn.isOk()) {
        if (conn.status().code() == collTimeout) return missingRanks();
        return conn.status();
      }
      net::HelloGate::Arrival arrival = conn.take();
      net::Socket sock = std::move(arrival.socket);
      Hello h{};
      memcpy(&h, arrival.hello.data(), sizeof(h));
      auto judged = judgeHello(&h, sizeof(h), secret_, nranks_);
      if (!judged.isOk()) {
        if (isStrangerRejection(judged.status())) {
          COLL_LOG(Warn, kBoot, -1, "bootstrap root: dropped a connection with a wrong secret or magic");
          continue;
        }
        const Status& bad = judged.status();
        COLL_LOG(Warn, kBoot, -1, "bootstrap root: {}", bad.message());
        sendError(sock, bad);
        if (nranks_ > 0) continue;
        return bad;
      }
      const HelloInfo hi = judged.value();
      if (nranks_ == 0) {
        nranks_ = hi.nranks;
        conns_.resize(nranks_);
      }
      if (conns_[hi.rank].valid()) {
        Status dup = makeError(collInvalidUsage, "two processes claim rank {}", hi.rank);
        COLL_LOG(Warn, kBoot, -1, "bootstrap root: {}", dup.message());
        sendError(sock, dup);
        continue;
      }
      conns_[hi.rank] = std::move(sock);
      ++arrived;
    }
  }

  Status missingRanks() {
    std::string missing;
    int n = 0;
    for (int r = 0; r < static_cast<int>(conns_.size()); ++r)
      if (!conns_[r].valid()) missing += (n++ ? ", " : "") + std::to_string(r);
    if (nranks_ == 0)
      return makeError(collTimeout, "no rank reached the bootstrap root within {} ms", timeoutMs_);
    return makeError(collTimeout, "rank(s) {} of {} never arrived at the bootstrap root within {} ms (COLL_TIMEOUT)",
                     missing, nranks_, timeoutMs_);
  }

  // One all-gather per round until every rank says Done.
  Status serveRounds() {
    for (;;) {
      Deadline deadline = Deadline::afterMs(timeoutMs_);
      std::vector<std::vector<char>> parts(nranks_);
      std::vector<bool> got(nranks_, false);
      int have = 0, done = 0;
      while (have < nranks_) {
        std::vector<pollfd> fds;
        std::vector<int> who;
        for (int r = 0; r < nranks_; ++r)
          if (!got[r]) {
            fds.push_back({conns_[r].fd(), POLLIN, 0});
            who.push_back(r);
          }
        int64_t ms = deadline.remainingMs();
        if (ms <= 0) {
          std::string late;
          for (size_t i = 0; i < who.size(); ++i) late += (i ? ", " : "") + std::to_string(who[i]);
          return makeError(collTimeout, "bootstrap: rank(s) {} did not reach the next init step within {} ms", late,
                           timeoutMs_);
        }
        int rc = poll(fds.data(), fds.size(), static_cast<int>(std::min<int64_t>(ms, 1000)));
        if (rc <= 0) continue;
        for (size_t i = 0; i < fds.size(); ++i) {
          if (!fds[i].revents) continue;
          int r = who[i];
          Frame f{};
          Status s = conns_[r].recvAll(&f, sizeof(f), deadline);
          if (!s.isOk()) return makeError(collRemoteError, "bootstrap: rank {} disconnected during init ({})", r, s.message());
          auto frame = judgeFrame(f.len, r);
          if (!frame.isOk()) return frame.status();
          if (frame.value().done) {
            ++done;
          } else {
            parts[r].resize(frame.value().len);
            COLL_CHECK(conns_[r].recvAll(parts[r].data(), frame.value().len, deadline));
          }
          got[r] = true;
          ++have;
        }
      }
      if (done == nranks_) return Status::ok();
      if (done > 0) return makeError(collInternalError, "bootstrap: some ranks finished init while others did not");
      size_t len = parts[0].size();
      std::vector<char> all;
      all.reserve(len * nranks_);
      for (int r = 0; r < nranks_; ++r) {
        if (parts[r].size() != len)
          return makeError(collInvalidUsage, "bootstrap: rank {} sent {} bytes where rank 0 sent {} (mixed libcoll versions?)",
                           r, parts[r].size(), len);
        all.insert(all.end(), parts[r].begin(), parts[r].end());
      }
      Reply rep{collSuccess, static_cast<uint32_t>(all.size())};
      for (int r = 0; r < nranks_; ++r) {
        COLL_CHECK(conns_[r].sendAll(&rep, sizeof(rep), deadline));
        COLL_CHECK(conns_[r].sendAll(all.data(), all.size(), deadline));
      }
    }
  }

  void sendError(net::Socket& sock, const Status& s) {
    std::string msg = s.message().substr(0, 4000);
    Reply rep{static_cast<uint32_t>(s.code()), static_cast<uint32_t>(msg.size())};
    Deadline d = Deadline::afterMs(1000);
    if (sock.sendAll(&rep, sizeof(rep), d).isOk()) (void)sock.sendAll(msg.data(), msg.size(), d);
  }

  void failAll(const Status& s) {
    for (auto& c : conns_)
      if (c.valid()) sendError(c, s);
  }

  net::Socket listener_;
  Secret secret_;
  int64_t timeoutMs_;
  int nranks_ = 0;
  std::vector<net::Socket> conns_;
};

}  // namespace

void startRoot(net::Socket listener, const Secret& secret, int64_t timeoutMs) {
  std::thread([l = std::move(listener), secret, timeoutMs]() mutable {
    try {
      Root(std::move(l), secret, timeoutMs).run();
    } catch (const std::exception& e) {
      COLL_LOG(Error, kBoot, -1, "bootstrap root failed: {}", e.what());
    }
  }).detach();
}

}  // namespace coll::boot
