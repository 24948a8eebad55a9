// clock.h — monotonic time and deadlines for every blocking wait.
#pragma once

#include <chrono>
#include <cstdint>

namespace coll {

using Clock = std::chrono::steady_clock;

inline int64_t nowNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now().time_since_epoch()).count();
}
// The same clock in seconds, for rates and progress lines.
inline double nowSeconds() { return std::chrono::duration<double>(Clock::now().time_since_epoch()).count(); }

// A point in time after which a wait gives up.  timeoutMs <= 0 never expires.
class Deadline {
 public:
  Deadline() = default;
  static Deadline afterMs(int64_t ms) {
    Deadline d;
    d.ms_ = ms;
    d.endNs_ = ms > 0 ? nowNs() + ms * 1000000 : INT64_MAX;
    return d;
  }
  bool expired() const { return endNs_ != INT64_MAX && nowNs() >= endNs_; }
  bool expiredAt(int64_t tNs) const { return tNs >= endNs_; }
  int64_t remainingMs() const {
    if (endNs_ == INT64_MAX) return INT64_MAX / 1000000;
    int64_t r = (endNs_ - nowNs()) / 1000000;
    return r > 0 ? r : 0;
  }
  int64_t timeoutMs() const { return ms_; }

 private:
  int64_t ms_ = 0;
  int64_t endNs_ = INT64_MAX;
};

}  // namespace coll
