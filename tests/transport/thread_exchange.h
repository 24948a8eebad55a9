// thread_exchange.h — transport::Exchange for ranks that are threads of
// one test process: what the bootstrap does, without sockets, so transport
// tests can see and tamper with what is exchanged.
#pragma once

#include <condition_variable>
#include <cstring>
#include <functional>
#include <mutex>
#include <vector>

#include "coll/transport.h"

namespace colltest {

class ThreadExchangeHub {
 public:
  explicit ThreadExchangeHub(int n) : n_(n), parts_(n) {}
  // Runs on the last rank to arrive in a round, before anyone gets the result.
  std::function<void(int round, const std::vector<char>& all)> onRound;

  coll::Status allGather(int rank, const void* mine, size_t bytes, std::vector<char>& out) {
    std::unique_lock<std::mutex> lock(mu_);
    const int round = round_;
    parts_[rank].assign(static_cast<const char*>(mine), static_cast<const char*>(mine) + bytes);
    if (++arrived_ == n_) {
      result_.clear();
      for (const auto& p : parts_) result_.insert(result_.end(), p.begin(), p.end());
      if (onRound) onRound(round, result_);
      arrived_ = 0;
      ++round_;
      cv_.notify_all();
    } else {
      cv_.wait(lock, [&] { return round_ != round; });
    }
    out = result_;
    return coll::Status::ok();
  }

 private:
  int n_;
  std::mutex mu_;
  std::condition_variable cv_;
  int arrived_ = 0;
  int round_ = 0;
  std::vector<std::vector<char>> parts_;
  std::vector<char> result_;
};

class ThreadExchange final : public coll::transport::Exchange {
 public:
  ThreadExchange(ThreadExchangeHub* hub, int rank) : hub_(hub), rank_(rank) {}
  coll::Status allGather(const void* mine, size_t bytes, std::vector<char>& out) override {
    return hub_->allGather(rank_, mine, bytes, out);
  }
  coll::Status barrier() override {
    std::vector<char> ignored;
    char none = 0;
    return hub_->allGather(rank_, &none, 0, ignored);
  }

 private:
  ThreadExchangeHub* hub_;
  int rank_;
};

}  // namespace colltest
