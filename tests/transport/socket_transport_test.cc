// The socket transport on its own: ranks as threads over a ThreadExchange,
// real TCP on loopback.  Data integrity and order across streams and
// channels, strangers at setup, a lost peer, failure notices, wake-ups.
#include <catch2/catch.hpp>

#include <atomic>
#include <chrono>
#include <cstring>
#include <thread>

#include "coll/base/socket.h"
#include "socket/socket_transport.h"
#include "socket/socket_wire.h"
#include "thread_exchange.h"

using namespace coll;

namespace {

transport::ConnectOptions options(int nchannels, int nslots, size_t slotBytes) {
  transport::ConnectOptions o;
  o.nchannels = nchannels;
  o.nslots = nslots;
  o.slotBytes = slotBytes;
  o.jobTag = "test";
  for (size_t i = 0; i < o.secret.size(); ++i) o.secret[i] = static_cast<uint8_t>(i * 7 + 1);
  o.timeoutMs = 20'000;
  return o;
}

sock::SocketOptions loopback(int nstreams) {
  sock::SocketOptions s;
  auto a = net::parseAddress("127.0.0.1:0");
  REQUIRE(a.isOk());
  s.interface.name = "lo";
  s.interface.address = a.value();
  s.interface.loopback = true;
  s.nstreams = nstreams;
  return s;
}

std::vector<transport::PeerInfo> peerTable(int n) {
  std::vector<transport::PeerInfo> all;
  for (int r = 0; r < n; ++r) all.push_back({r, 0, 1, 0, 0, 1});
  return all;
}

// Connects n transports (threads); returns them, or fails the test.
std::vector<std::unique_ptr<sock::SocketTransport>> connectAll(int n, int nstreams, const transport::ConnectOptions& o,
                                                              colltest::ThreadExchangeHub& hub,
                                                              size_t bufferBytes = 4u << 20) {
  std::vector<std::unique_ptr<sock::SocketTransport>> ts;
  for (int r = 0; r < n; ++r) {
    sock::SocketOptions so = loopback(nstreams);
    so.bufferBytes = bufferBytes;
    ts.push_back(std::make_unique<sock::SocketTransport>(so));
  }
  std::vector<Status> results(n);
  std::vector<std::thread> threads;
  for (int r = 0; r < n; ++r)
    threads.emplace_back([&, r] {
      colltest::ThreadExchange ex(&hub, r);
      std::vector<int> peers;
      for (int p = 0; p < n; ++p)
        if (p != r) peers.push_back(p);
      results[r] = ts[r]->connect(ex, r, peerTable(n), peers, o);
    });
  for (auto& t : threads) t.join();
  for (int r = 0; r < n; ++r) {
    INFO("rank " << r << ": " << results[r].message());
    REQUIRE(results[r].isOk());
  }
  return ts;
}

// Fills a message: header area tagged with (from, channel, k), payload a
// pattern only this message has.
size_t fill(char* slot, size_t slotBytes, int from, int channel, uint64_t k) {
  size_t payload = (k * 7919 + channel * 131 + from) % (slotBytes - transport::kSlotHeaderBytes) + 1;
  uint64_t tag[3] = {static_cast<uint64_t>(from), static_cast<uint64_t>(channel), k};
  memcpy(slot, tag, sizeof(tag));
  for (size_t i = 0; i < payload; ++i)
    slot[transport::kSlotHeaderBytes + i] = static_cast<char>((i * 31 + k * 17 + channel + from * 3) & 0xff);
  return transport::kSlotHeaderBytes + payload;
}

bool verify(const char* slot, size_t bytes, int from, int channel, uint64_t k) {
  uint64_t tag[3];
  memcpy(tag, slot, sizeof(tag));
  if (tag[0] != static_cast<uint64_t>(from) || tag[1] != static_cast<uint64_t>(channel) || tag[2] != k) return false;
  for (size_t i = 0; i < bytes - transport::kSlotHeaderBytes; ++i)
    if (slot[transport::kSlotHeaderBytes + i] != static_cast<char>((i * 31 + k * 17 + channel + from * 3) & 0xff))
      return false;
  return true;
}

}  // namespace

TEST_CASE("messages arrive whole and in order on every channel, over several streams", "[socket]") {
  const int n = 3, nch = 2, nstreams = GENERATE(1, 3);
  const size_t slotBytes = 4096;
  const uint64_t perLink = 400;
  colltest::ThreadExchangeHub hub(n);
  auto o = options(nch, 4, slotBytes);
  auto ts = connectAll(n, nstreams, o, hub);
  std::atomic<int> bad{0};
  std::vector<std::thread> threads;
  for (int r = 0; r < n; ++r)
    threads.emplace_back([&, r] {
      // Every rank sends perLink messages to every peer on every channel and
      // receives as many, interleaved, polling like the executor does.
      std::vector<uint64_t> sent(n * nch, 0), got(n * nch, 0);
      uint64_t remaining = 2 * (n - 1) * nch * perLink;
      while (remaining > 0) {
        for (int p = 0; p < n; ++p) {
          if (p == r) continue;
          for (int c = 0; c < nch; ++c) {
            uint64_t& s = sent[p * nch + c];
            if (s < perLink) {
              if (void* slot = ts[r]->sendConn(c, p)->tryAcquire()) {
                size_t bytes = fill(static_cast<char*>(slot), slotBytes, r, c, s);
                ts[r]->sendConn(c, p)->post(bytes);
                ++s;
                --remaining;
              }
            }
            uint64_t& g = got[p * nch + c];
            size_t bytes = 0;
            if (g < perLink) {
              if (const void* m = ts[r]->recvConn(c, p)->tryPeek(&bytes)) {
                if (!verify(static_cast<const char*>(m), bytes, p, c, g)) bad.fetch_add(1);
                ts[r]->recvConn(c, p)->release();
                ++g;
                --remaining;
              }
            }
          }
        }
      }
      while (ts[r]->sendsInFlight()) std::this_thread::yield();
    });
  for (auto& t : threads) t.join();
  CHECK(bad.load() == 0);
  for (auto& t : ts) {
    CHECK(t->checkPeers().isOk());
    CHECK(t->deadPeers().empty());
  }
}

TEST_CASE("strangers at setup are dropped and the job still connects", "[socket][security]") {
  const int n = 2;
  colltest::ThreadExchangeHub hub(n);
  auto o = options(1, 2, 4096);
  int strangers = 0;
  std::vector<net::Socket> silentOnes;  // stay open and silent during setup
  // When the listen addresses have gone round, strangers knock on rank 0
  // before rank 1 does: garbage, a wrong secret, a right secret with wrong
  // fields, and one that connects and says nothing.
  hub.onRound = [&](int round, const std::vector<char>& all) {
    if (round != 0) return;
    sock::ListenAddress rank0;
    memcpy(&rank0, all.data(), sizeof(rank0));
    net::Address a;
    a.storage = rank0.addr;
    a.len = rank0.len;
    auto send = [&](const void* bytes, size_t len) {
      auto s = net::Socket::connectTo(a, Deadline::afterMs(2000));
      REQUIRE(s.isOk());
      if (len > 0) REQUIRE(s.value().sendAll(bytes, len, Deadline::afterMs(2000)).isOk());
      ++strangers;
      return s.take();
    };
    char garbage[64];
    for (size_t i = 0; i < sizeof(garbage); ++i) garbage[i] = static_cast<char>(i * 13);
    send(garbage, sizeof(garbage));
    sock::ConnHello wrong{};
    wrong.magic = sock::kConnMagic;
    wrong.version = sock::kConnVersion;
    wrong.fromRank = 1;
    send(&wrong, sizeof(wrong));
    sock::ConnHello impossible = wrong;
    memcpy(impossible.secret, o.secret.data(), sock::kSecretBytes);
    impossible.fromRank = 7;  // no such rank
    send(&impossible, sizeof(impossible));
    net::Socket silent = send(nullptr, 0);
    silent.close();
    for (int i = 0; i < 3; ++i) silentOnes.push_back(send(nullptr, 0));
  };
  auto t0 = std::chrono::steady_clock::now();
  auto ts = connectAll(n, 1, o, hub);
  // Hellos are read in parallel: silent strangers cost the job nothing.
  CHECK(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() < 1.5);
  CHECK(strangers == 7);
  silentOnes.clear();
  // And the connections work.
  void* slot = nullptr;
  while ((slot = ts[1]->sendConn(0, 0)->tryAcquire()) == nullptr) {
  }
  size_t bytes = fill(static_cast<char*>(slot), 4096, 1, 0, 0);
  ts[1]->sendConn(0, 0)->post(bytes);
  const void* m = nullptr;
  size_t got = 0;
  while ((m = ts[0]->recvConn(0, 1)->tryPeek(&got)) == nullptr) {
  }
  CHECK(got == bytes);
  CHECK(verify(static_cast<const char*>(m), got, 1, 0, 0));
}

TEST_CASE("sleep is not woken, again and again, by a frame nobody reads yet", "[socket]") {
  // Rank 1 sends on channel 1 while rank 0 waits on channel 0 (a frame for
  // a later step).  The first sleep may return at once: it takes the frame
  // into its slot.  The next must sleep: the socket was drained.  Before the
  // fix every sleep returned at once and a waiting rank spun in ppoll.
  colltest::ThreadExchangeHub hub(2);
  auto ts = connectAll(2, 1, options(2, 2, 4096), hub);
  void* slot = nullptr;
  while ((slot = ts[1]->sendConn(1, 0)->tryAcquire()) == nullptr) {
  }
  const size_t bytes = fill(static_cast<char*>(slot), 4096, 1, 1, 0);
  ts[1]->sendConn(1, 0)->post(bytes);
  while (ts[1]->sendsInFlight()) {
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(20));  // it is in rank 0's socket
  ts[0]->sleep(ts[0]->prepareToSleep(), 200'000'000);
  auto t0 = std::chrono::steady_clock::now();
  ts[0]->sleep(ts[0]->prepareToSleep(), 200'000'000);
  auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - t0).count();
  CHECK(ms >= 150);
  // Nothing was lost: the frame waits in its slot.
  const void* m = nullptr;
  size_t got = 0;
  CHECK(ts[0]->recvConn(0, 1)->tryPeek(&got) == nullptr);
  while ((m = ts[0]->recvConn(1, 1)->tryPeek(&got)) == nullptr) {
  }
  CHECK(got == bytes);
  CHECK(verify(static_cast<const char*>(m), got, 1, 1, 0));
}

TEST_CASE("hello judgement: secret first, then fields and geometry", "[socket][security]") {
  sock::HelloExpect e{};
  for (size_t i = 0; i < e.secret.size(); ++i) e.secret[i] = static_cast<uint8_t>(i);
  e.myRank = 1;
  e.nranks = 4;
  e.nchannels = 2;
  e.nstreams = 2;
  e.slotBytes = 4096;
  e.nslots = 4;
  sock::ConnHello h{};
  memcpy(h.secret, e.secret.data(), sock::kSecretBytes);
  h.magic = sock::kConnMagic;
  h.version = sock::kConnVersion;
  h.fromRank = 3;
  h.toRank = 1;
  h.channel = 1;
  h.stream = 1;
  h.slotBytes = 4096;
  h.nslots = 4;
  auto ok = sock::parseHello(&h, sizeof(h), e);
  REQUIRE(ok.isOk());
  CHECK(ok.value().fromRank == 3);
  CHECK(ok.value().channel == 1);
  CHECK_FALSE(sock::parseHello(&h, sizeof(h) - 1, e).isOk());
  auto bad = h;
  bad.secret[31] ^= 1;
  CHECK_THAT(sock::parseHello(&bad, sizeof(bad), e).status().message(), Catch::Contains("secret"));
  bad = h;
  bad.toRank = 2;
  CHECK_FALSE(sock::parseHello(&bad, sizeof(bad), e).isOk());
  bad = h;
  bad.fromRank = 1;  // ourselves
  CHECK_FALSE(sock::parseHello(&bad, sizeof(bad), e).isOk());
  bad = h;
  bad.channel = -1;  // control connections have stream 0 only
  CHECK_FALSE(sock::parseHello(&bad, sizeof(bad), e).isOk());
  bad.stream = 0;
  CHECK(sock::parseHello(&bad, sizeof(bad), e).isOk());
  bad = h;
  bad.slotBytes = 8192;
  auto geometry = sock::parseHello(&bad, sizeof(bad), e);
  REQUIRE_FALSE(geometry.isOk());
  CHECK(geometry.status().code() == collInvalidUsage);
  CHECK(sock::checkFrameHeader({sock::kData, 4096}, 4096).isOk());
  CHECK_FALSE(sock::checkFrameHeader({sock::kData, 4097}, 4096).isOk());
  CHECK_FALSE(sock::checkFrameHeader({sock::kData, 0}, 4096).isOk());
  CHECK_FALSE(sock::checkFrameHeader({sock::kFailure, sock::kMaxNoticeBytes + 1}, 4096).isOk());
  CHECK_FALSE(sock::checkFrameHeader({7, 8}, 4096).isOk());
}

TEST_CASE("a failure notice reaches the peer; a closed peer is seen as gone", "[socket]") {
  const int n = 3;
  colltest::ThreadExchangeHub hub(n);
  auto ts = connectAll(n, 1, options(1, 2, 4096), hub);
  ts[2]->notifyPeers("rank 2: something broke at step 3");
  Status s;
  for (int i = 0; i < 1000 && s.isOk(); ++i) {
    s = ts[0]->checkPeers();
    if (s.isOk()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  REQUIRE_FALSE(s.isOk());
  CHECK(s.code() == collRemoteError);
  CHECK_THAT(s.message(), Catch::Contains("rank 2 failed: rank 2: something broke at step 3"));
  // Rank 1 goes away: rank 0 sees it gone, and a receive from it stays empty.
  ts[1].reset();
  bool gone = false;
  for (int i = 0; i < 1000 && !gone; ++i) {
    for (int d : ts[0]->deadPeers()) gone = gone || d == 1;
    if (!gone) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  CHECK(gone);
  size_t bytes;
  CHECK(ts[0]->recvConn(0, 1)->tryPeek(&bytes) == nullptr);
}

TEST_CASE("what a peer sent before it left can still be read", "[socket]") {
  colltest::ThreadExchangeHub hub(2);
  auto ts = connectAll(2, 2, options(1, 4, 4096), hub);
  for (uint64_t k = 0; k < 3; ++k) {
    void* slot = ts[1]->sendConn(0, 0)->tryAcquire();
    REQUIRE(slot != nullptr);
    ts[1]->sendConn(0, 0)->post(fill(static_cast<char*>(slot), 4096, 1, 0, k));
  }
  while (ts[1]->sendsInFlight()) {
  }
  ts[1].reset();
  for (uint64_t k = 0; k < 3; ++k) {
    const void* m = nullptr;
    size_t bytes = 0;
    for (int i = 0; i < 100000 && m == nullptr; ++i) m = ts[0]->recvConn(0, 1)->tryPeek(&bytes);
    REQUIRE(m != nullptr);
    CHECK(verify(static_cast<const char*>(m), bytes, 1, 0, k));
    ts[0]->recvConn(0, 1)->release();
  }
}

TEST_CASE("payloads sent from the caller's memory arrive like slot payloads; settleSends frees that memory",
          "[socket]") {
  const int nstreams = GENERATE(1, 2);
  const size_t slotBytes = 256 << 10, payload = slotBytes - transport::kSlotHeaderBytes;
  colltest::ThreadExchangeHub hub(2);
  // Small kernel buffers: the big frames cannot leave whole while the
  // receiver does not read, so some are half sent when settled.
  auto ts = connectAll(2, nstreams, options(1, 4, slotBytes), hub, 16 << 10);
  auto* sc = ts[1]->sendConn(0, 0);
  auto* rc = ts[0]->recvConn(0, 1);
  REQUIRE(sc->sendsExternal());
  // Four frames: a large external one, a small external one (copied: below
  // the padded frame size), a plain one, a large external one again.
  const size_t sizes[4] = {payload, 100, 5000, payload - 3};
  std::vector<std::vector<char>> src(4);
  auto pattern = [](size_t k, size_t i) { return static_cast<char>((i * 13 + k * 101 + 7) & 0xff); };
  for (uint64_t k = 0; k < 4; ++k) {
    src[k].resize(sizes[k]);
    for (size_t i = 0; i < sizes[k]; ++i) src[k][i] = pattern(k, i);
    char* slot = static_cast<char*>(sc->tryAcquire());
    REQUIRE(slot != nullptr);
    uint64_t tag[3] = {1, 0, k};
    memcpy(slot, tag, sizeof(tag));
    if (k == 2) {
      memcpy(slot + transport::kSlotHeaderBytes, src[k].data(), sizes[k]);
      sc->post(transport::kSlotHeaderBytes + sizes[k]);
    } else {
      sc->postExternal(transport::kSlotHeaderBytes, src[k].data(), sizes[k]);
    }
  }
  // The caller takes its memory back before everything left: settle, then
  // scribble over it; the receiver must still get the original bytes.
  ts[1]->settleSends();
  for (auto& b : src) std::fill(b.begin(), b.end(), '\x5a');
  for (uint64_t k = 0; k < 4; ++k) {
    const void* m = nullptr;
    size_t bytes = 0;
    for (int i = 0; i < 2000000 && m == nullptr; ++i) {
      m = rc->tryPeek(&bytes);
      (void)ts[1]->sendsInFlight();  // pushes the sender's frames on
    }
    REQUIRE(m != nullptr);
    const char* got = static_cast<const char*>(m);
    uint64_t tag[3];
    memcpy(tag, got, sizeof(tag));
    CHECK(tag[2] == k);
    REQUIRE(bytes == transport::kSlotHeaderBytes + sizes[k]);
    size_t wrong = 0;
    for (size_t i = 0; i < sizes[k]; ++i) wrong += got[transport::kSlotHeaderBytes + i] != pattern(k, i);
    INFO("frame " << k);
    CHECK(wrong == 0);
    rc->release();
  }
  CHECK_FALSE(ts[1]->sendsInFlight());
}

TEST_CASE("sleep returns on wake() from another thread and on arriving data", "[socket]") {
  colltest::ThreadExchangeHub hub(2);
  auto ts = connectAll(2, 1, options(1, 2, 4096), hub);
  auto t0 = std::chrono::steady_clock::now();
  std::thread waker([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    ts[0]->wake();
  });
  ts[0]->sleep(ts[0]->prepareToSleep(), 5'000'000'000);
  waker.join();
  auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - t0).count();
  CHECK(ms < 2000);
  std::thread sender([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    void* slot = ts[1]->sendConn(0, 0)->tryAcquire();
    ts[1]->sendConn(0, 0)->post(fill(static_cast<char*>(slot), 4096, 1, 0, 0));
  });
  t0 = std::chrono::steady_clock::now();
  ts[0]->sleep(ts[0]->prepareToSleep(), 5'000'000'000);
  sender.join();
  ms = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - t0).count();
  CHECK(ms < 2000);
}
