#include "bootstrap/root.h"

#include <poll.h>
#include <sys/socket.h>

#include <cerrno>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <exception>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "bootstrap/protocol.h"
#include "coll/base/hello_gate.h"
#include "coll/base/log.h"

namespace coll::boot {
namespace {

// The roots this process runs, until each has finished.  Never destroyed:
// a detached root thread may still touch it while the process exits.
struct LiveRoots {
  std::mutex mu;
  std::condition_variable finished;
  std::vector<Secret> running;
};
LiveRoots& liveRoots() {
  static auto* roots = new LiveRoots();
  return *roots;
}

void markFinished(const Secret& secret) {
  LiveRoots& l = liveRoots();
  {
    std::lock_guard<std::mutex> lock(l.mu);
    auto it = std::find_if(l.running.begin(), l.running.end(), [&](const Secret& s) { return secretsEqual(s, secret); });
    if (it != l.running.end()) l.running.erase(it);
  }
  l.finished.notify_all();
}

class Root {
 public:
  Root(net::Socket listener, const Secret& secret, int64_t timeoutMs)
      : listener_(std::move(listener)), secret_(secret), timeoutMs_(timeoutMs) {}

  void run() {
    Status s = gather();
    if (dropped_.held() > 0)
      COLL_LOG(Warn, kBoot, log::kRootLogRank, "bootstrap root: {} more connections dropped (wrong secret or magic, or "
               "no complete hello)", dropped_.held());
    if (s.isOk()) s = serveRounds();
    if (!s.isOk()) {
      COLL_LOG(Warn, kBoot, log::kRootLogRank, "bootstrap root: {}", s.message());
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
      for (const std::string& why : gate.takeDropped()) warnDropped(fmt::format("sent no complete hello: {}", why));
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
          warnDropped("had a wrong secret or magic");
          continue;
        }
        // It knows the secret, so it belongs to this job, which cannot
        // start: every rank hears why now, not at the timeout.
        rejected_ = std::move(sock);
        return judged.status();
      }
      const HelloInfo hi = judged.value();
      if (nranks_ == 0) {
        nranks_ = hi.nranks;
        conns_.resize(nranks_);
      }
      if (conns_[hi.rank].valid()) {
        rejected_ = std::move(sock);
        return makeError(collInvalidUsage, "two processes say they are rank {} of {}: every rank needs its own rank",
                         hi.rank, nranks_);
      }
      conns_[hi.rank] = std::move(sock);
      ++arrived;
    }
  }

  void warnDropped(const std::string& why) {
    uint64_t held = 0;
    if (dropped_.admit(&held))
      COLL_LOG(Warn, kBoot, log::kRootLogRank, "bootstrap root: dropped a connection that {}{}", why,
               held ? fmt::format(" ({} more dropped since the last such line)", held) : std::string());
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

  // Sends every connected rank the error, then reads what they still send
  // until they close (at most 2 s): a socket closed with unread bytes
  // resets the connection, and the reset can destroy the error in flight.
  void failAll(const Status& s) {
    std::vector<net::Socket*> all;
    for (auto& c : conns_)
      if (c.valid()) all.push_back(&c);
    if (rejected_.valid()) all.push_back(&rejected_);
    for (net::Socket* c : all) {
      sendError(*c, s);
      ::shutdown(c->fd(), SHUT_WR);
    }
    Deadline d = Deadline::afterMs(2000);
    std::vector<pollfd> open;
    for (net::Socket* c : all) open.push_back({c->fd(), POLLIN, 0});
    while (!open.empty() && d.remainingMs() > 0) {
      if (poll(open.data(), open.size(), static_cast<int>(std::min<int64_t>(d.remainingMs(), 100))) <= 0) continue;
      for (size_t i = open.size(); i-- > 0;) {
        if (!open[i].revents) continue;
        char sink[4096];
        ssize_t n = recv(open[i].fd, sink, sizeof sink, MSG_DONTWAIT);
        if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR)) open.erase(open.begin() + static_cast<long>(i));
      }
    }
  }

  net::Socket listener_;
  Secret secret_;
  int64_t timeoutMs_;
  int nranks_ = 0;
  std::vector<net::Socket> conns_;
  net::Socket rejected_;  // a rank that cannot join: it hears the error too
  log::Throttle dropped_{3, 10000};  // strangers: 3 lines, then one per 10 s
};

}  // namespace

void startRoot(net::Socket listener, const Secret& secret, int64_t timeoutMs) {
  {
    LiveRoots& l = liveRoots();
    std::lock_guard<std::mutex> lock(l.mu);
    l.running.push_back(secret);
  }
  std::thread([l = std::move(listener), secret, timeoutMs]() mutable {
    try {
      // Its sockets close (the last replies flushed) before it counts as finished.
      Root(std::move(l), secret, timeoutMs).run();
    } catch (const std::exception& e) {
      COLL_LOG(Error, kBoot, log::kRootLogRank, "bootstrap root failed: {}", e.what());
    }
    markFinished(secret);
  }).detach();
}

void awaitRootInProcess(const Secret& secret, const Deadline& deadline) {
  LiveRoots& l = liveRoots();
  std::unique_lock<std::mutex> lock(l.mu);
  auto runs = [&] {
    return std::any_of(l.running.begin(), l.running.end(), [&](const Secret& s) { return secretsEqual(s, secret); });
  };
  while (runs()) {
    const int64_t ms = deadline.remainingMs();
    if (ms <= 0) {
      COLL_LOG(Warn, kBoot, log::kRootLogRank, "bootstrap root: still serving other ranks at the deadline; this rank goes on");
      return;
    }
    l.finished.wait_for(lock, std::chrono::milliseconds(std::min<int64_t>(ms, 1000)));
  }
}

}  // namespace coll::boot
