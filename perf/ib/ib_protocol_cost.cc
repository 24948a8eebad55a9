// ib_protocol_cost — what the IB transport's protocol costs per message,
// measured on one connection: rank 0 streams K messages of S bytes to rank
// 1 through IbTransport's SendConn/RecvConn (two processes, forked, that
// exchange their setup over a socket pair; the verbs library
// COLL_IBVERBS_LIB names: the emulated provider here, a real NIC's
// libibverbs elsewhere).
//
// Per message: send and receive work requests posted, completions polled,
// ibv_poll_cq calls, control bytes (clear-to-send grants) per data byte,
// wall time per message (the stream's rate), and each side's work: the
// time in the transport calls that did something (an acquire that got a
// slot and its post; a peek that found a message and its release, which
// posts the receive and the grant), without the polls that found nothing
// (both sides spin; their thread CPU time is all spin).  On the emulation
// the sender's post includes the emulated NIC's copy (process_vm_writev
// and its checks), which a real NIC does itself.
//
//   build/perf/ib_protocol_cost [messages=20000] [sizes=64,65536,262144]
// with COLL_IBVERBS_LIB=build/transports/ib/emulation/libcoll_verbs_emu.so
// on a machine without a NIC.
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <sstream>
#include <string>
#include <vector>

#include "ib/ib_settings.h"
#include "ib/ib_transport.h"

using namespace coll;

namespace {

// The bootstrap's part for two processes: each all-gather writes ours and
// reads the peer's over a socket pair.
class PairExchange final : public transport::Exchange {
 public:
  PairExchange(int fd, int rank) : fd_(fd), rank_(rank) {}
  Status allGather(const void* mine, size_t bytes, std::vector<char>& out) override {
    std::vector<char> theirs(bytes);
    if (!writeAll(mine, bytes) || !readAll(theirs.data(), bytes))
      return makeError(collSystemError, "ib_protocol_cost: the exchange with the other process broke");
    out.resize(2 * bytes);
    memcpy(out.data() + rank_ * bytes, mine, bytes);
    memcpy(out.data() + (1 - rank_) * bytes, theirs.data(), bytes);
    return Status::ok();
  }
  Status barrier() override {
    std::vector<char> ignored;
    char none = 0;
    return allGather(&none, 1, ignored);
  }
  bool writeAll(const void* p, size_t n) {
    for (size_t done = 0; done < n;) {
      ssize_t k = ::write(fd_, static_cast<const char*>(p) + done, n - done);
      if (k <= 0) return false;
      done += static_cast<size_t>(k);
    }
    return true;
  }
  bool readAll(void* p, size_t n) {
    for (size_t done = 0; done < n;) {
      ssize_t k = ::read(fd_, static_cast<char*>(p) + done, n - done);
      if (k <= 0) return false;
      done += static_cast<size_t>(k);
    }
    return true;
  }

 private:
  int fd_, rank_;
};

int64_t wallNs() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1'000'000'000LL + ts.tv_nsec;
}

struct Side {
  ib::IbCounters before, after;
  int64_t wallNs = 0, workNs = 0, postNs = 0;
  std::string error;
};

ib::IbCounters diff(const ib::IbCounters& a, const ib::IbCounters& b) {
  ib::IbCounters d;
  d.sendWrs = b.sendWrs - a.sendWrs;
  d.dataWrs = b.dataWrs - a.dataWrs;
  d.recvWrs = b.recvWrs - a.recvWrs;
  d.cqes = b.cqes - a.cqes;
  d.polls = b.polls - a.polls;
  d.dataBytes = b.dataBytes - a.dataBytes;
  d.ctrlBytes = b.ctrlBytes - a.ctrlBytes;
  return d;
}

void runRank(int rank, PairExchange& ex, const ib::IbSettings& s, long messages, size_t bytes, Side& out) {
  std::vector<transport::PeerInfo> all(2);
  for (int r = 0; r < 2; ++r) {
    all[r] = transport::PeerInfo{};
    all[r].rank = r;
    all[r].numaNode = -1;
  }
  transport::ConnectOptions opt;
  opt.nchannels = 1;
  ib::IbOptions io;
  io.settings = s;
  ib::IbTransport t(io);
  if (Status st = t.connect(ex, rank, all, {1 - rank}, opt); !st.isOk()) {
    out.error = st.message();
    return;
  }
  const size_t msg = std::max(bytes, transport::kSlotHeaderBytes);
  out.before = t.counters();
  const int64_t w0 = wallNs();
  if (rank == 0) {
    transport::SendConn* sc = t.sendConn(0, 1);
    for (long m = 0; m < messages; ++m) {
      void* slot;
      int64_t a0;
      do a0 = wallNs();
      while ((slot = sc->tryAcquire()) == nullptr);
      const int64_t a1 = wallNs();
      memset(slot, static_cast<int>(m), msg);
      const int64_t p0 = wallNs();
      sc->post(msg);
      const int64_t p1 = wallNs();
      out.postNs += p1 - p0;
      out.workNs += (a1 - a0) + (p1 - p0);
    }
    while (t.sendsInFlight()) {
    }
  } else {
    transport::RecvConn* rc = t.recvConn(0, 0);
    for (long m = 0; m < messages; ++m) {
      size_t got = 0;
      const void* p;
      int64_t k0;
      do k0 = wallNs();
      while ((p = rc->tryPeek(&got)) == nullptr);
      const int64_t k1 = wallNs();
      if (got != msg || static_cast<const unsigned char*>(p)[msg - 1] != static_cast<unsigned char>(m)) {
        out.error = "message " + std::to_string(m) + " arrived wrong";
        return;
      }
      const int64_t r0 = wallNs();
      rc->release();
      out.workNs += (k1 - k0) + (wallNs() - r0);
    }
  }
  out.wallNs = wallNs() - w0;
  out.after = t.counters();
  (void)ex.barrier();  // neither side tears its QPs down while the other still polls
}

}  // namespace

int main(int argc, char** argv) {
  const long messages = argc > 1 ? atol(argv[1]) : 20000;
  std::vector<size_t> sizes;
  std::stringstream ss(argc > 2 ? argv[2] : "64,65536,262144");
  for (std::string item; std::getline(ss, item, ',');) sizes.push_back(strtoull(item.c_str(), nullptr, 10));
  auto s = ib::ibSettingsFromTable();
  if (!s.isOk()) {
    fprintf(stderr, "ib_protocol_cost: %s\n", s.status().message().c_str());
    return 2;
  }
  printf("# ib_protocol_cost: %ld messages per size, one connection, verbs from %s\n", messages,
         s.value().verbsLib.empty() ? "libibverbs.so.1" : s.value().verbsLib.c_str());
  printf("# %10s %9s %9s %9s %9s %12s %10s %12s %10s %12s\n", "bytes", "sendWR/m", "recvWR/m", "CQE/m", "polls/m",
         "ctrlB/dataB", "wall ns/m", "send work ns", "of it post", "recv work ns");
  fflush(stdout);  // or the child prints the header again
  int fds[2];
  if (socketpair(AF_UNIX, SOCK_STREAM, 0, fds) != 0) {
    perror("socketpair");
    return 1;
  }
  const pid_t child = fork();
  const int rank = child == 0 ? 1 : 0;
  PairExchange ex(fds[rank], rank);
  int rc = 0;
  for (size_t bytes : sizes) {
    Side side[2];
    runRank(rank, ex, s.value(), messages, bytes, side[rank]);
    // The receiver's numbers and error to the sender, which prints.
    char err[256] = {};
    snprintf(err, sizeof(err), "%s", side[rank].error.c_str());
    if (rank == 1) {
      ex.writeAll(&side[1].after, sizeof(side[1].after));
      ex.writeAll(&side[1].before, sizeof(side[1].before));
      ex.writeAll(&side[1].workNs, sizeof(side[1].workNs));
      ex.writeAll(err, sizeof(err));
      if (!side[1].error.empty()) return 1;
      continue;
    }
    if (!ex.readAll(&side[1].after, sizeof(side[1].after)) || !ex.readAll(&side[1].before, sizeof(side[1].before)) ||
        !ex.readAll(&side[1].workNs, sizeof(side[1].workNs)) || !ex.readAll(err, sizeof(err))) {
      fprintf(stderr, "ib_protocol_cost: the receiving process went away\n");
      rc = 1;
      break;
    }
    side[1].error = err;
    bool failed = false;
    for (const Side& x : side)
      if (!x.error.empty()) {
        fprintf(stderr, "ib_protocol_cost: %s\n", x.error.c_str());
        failed = true;
      }
    if (failed) {
      rc = 1;
      break;
    }
    const ib::IbCounters a = diff(side[0].before, side[0].after), b = diff(side[1].before, side[1].after);
    const double m = static_cast<double>(messages);
    printf("  %10zu %9.2f %9.2f %9.2f %9.1f %12.5f %10.0f %12.0f %10.0f %12.0f\n", std::max(bytes, size_t{64}),
           (a.sendWrs + b.sendWrs) / m, (a.recvWrs + b.recvWrs) / m, (a.cqes + b.cqes) / m, (a.polls + b.polls) / m,
           static_cast<double>(a.ctrlBytes + b.ctrlBytes) / static_cast<double>(a.dataBytes + b.dataBytes),
           side[0].wallNs / m, side[0].workNs / m, side[0].postNs / m, side[1].workNs / m);
    fflush(stdout);
  }
  if (rank == 1) return 0;
  int status = 0;
  waitpid(child, &status, 0);
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) rc = 1;
  return rc;
  return 0;
}
