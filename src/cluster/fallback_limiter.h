// FallbackLimiter: how fast one client may read the under-store directly when
// its workers fail (client.fallback_rate bytes/s, client.fallback_requests
// requests/s). A lost worker sends its readers to the store; without a limit
// every client of the cluster would stampede it at once.
//
// Two token buckets, each holding one second of its rate (the burst). A call
// reserves its tokens up front: when the buckets are short, it waits until
// they have refilled (a rate limit, not a synchronisation), unless that wait
// would end past the call's deadline, in which case it reserves nothing and
// fails at once with kUnavailable "under-store fallback rate-limited", naming
// the limit and the config key. A rate of 0 means unlimited. A call larger
// than the burst is let through once the bucket is full, leaving it in debt.
//
// Thread safety: all methods are safe from any thread.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <mutex>
#include <string_view>

#include "shoal/status.h"

namespace shoal {

class FallbackLimiter {
 public:
  using Clock = std::chrono::steady_clock;
  FallbackLimiter(uint64_t bytes_per_second, uint64_t requests_per_second);

  // Takes `bytes` and one request from the buckets, waiting for them when
  // needed. `what` names the call for the error ("read /data/x").
  Status Acquire(uint64_t bytes, Clock::time_point deadline, std::string_view what);

  uint64_t throttled_waits() const { return waits_.load(std::memory_order_relaxed); }
  uint64_t rejected() const { return rejected_.load(std::memory_order_relaxed); }
  double waited_seconds() const;

 private:
  struct Bucket {
    double rate = 0;    // tokens per second; 0 = unlimited
    double tokens = 0;  // may go below 0 (reserved ahead)
    void Refill(double seconds) {
      if (rate > 0) tokens = std::min(rate, tokens + rate * seconds);
    }
    // Seconds until `n` more can be taken (0: now).
    double WaitFor(double n) const {
      if (rate <= 0) return 0;
      double short_by = std::min(n, rate) - tokens;  // a request larger than the burst waits for a full bucket
      return short_by > 0 ? short_by / rate : 0;
    }
  };

  std::mutex mu_;
  Bucket bytes_, requests_;
  Clock::time_point last_;
  std::atomic<uint64_t> waits_{0}, rejected_{0};
  std::atomic<uint64_t> waited_us_{0};
};

}  // namespace shoal
