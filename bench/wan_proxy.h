// WanProxy: a user-space TCP proxy that makes a loopback object store look
// like a remote one (this kernel has no netem). Every peer in the benchmarks
// reads the S3 server through it, so they all pay the same WAN.
//
// What it adds, per the rules in shared/BENCHMARKS.md:
//   - First-byte delay. The proxy sees bytes, not HTTP, and treats the stream
//     as request/response turns: the first client bytes after a response (or
//     on a fresh connection) start a new request. The first response byte of
//     that request is held until `first_byte_delay` after the request arrived.
//     This is exact for HTTP/1.1 without pipelining, which is what S3 clients
//     do.
//   - Bandwidth caps, as token buckets, per connection and in aggregate, each
//     direction separately (0 = no cap).
//
// It counts connections, requests and bytes in each direction; the counters are
// exact and are what the egress figures are read from.
//
// Thread safety: all methods may be called from any thread. Start() binds the
// listening socket before it returns, so port() is valid right after it.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>

#include "shoal/status.h"

namespace shoal::bench {

struct WanProxyOptions {
  std::string upstream_host = "127.0.0.1";
  uint16_t upstream_port = 0;
  std::string listen_host = "127.0.0.1";
  uint16_t listen_port = 0;  // 0: any free port
  std::chrono::microseconds first_byte_delay{20'000};
  uint64_t conn_bytes_per_sec = 25'000'000;   // per connection and direction; 0 = unlimited
  uint64_t total_bytes_per_sec = 200'000'000; // all connections, per direction; 0 = unlimited
};

struct WanProxyStats {
  uint64_t connections = 0;      // accepted client connections
  uint64_t active_connections = 0;
  uint64_t upstream_failures = 0;  // connects to the upstream that failed
  uint64_t requests = 0;         // request turns (see above)
  uint64_t bytes_to_upstream = 0;    // client -> server (request bytes)
  uint64_t bytes_from_upstream = 0;  // server -> client (response bytes: the egress)

  // "connections=.. active=.. upstream_failures=.. requests=.. bytes_up=.. bytes_down=.."
  std::string ToLine() const;
};

class WanProxy {
 public:
  static Result<std::unique_ptr<WanProxy>> Start(const WanProxyOptions& options);
  ~WanProxy();  // Stop()

  uint16_t port() const;
  WanProxyStats stats() const;

  // Closes the listener and every connection, and joins all threads.
  void Stop();

  class Impl;

 private:
  explicit WanProxy(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

// A rate limiter shared by threads: Acquire(n) blocks until n bytes may pass
// at `bytes_per_sec`, with a burst of `burst` bytes. Reservations are taken in
// arrival order (the bucket may go into debt), so N threads together get the
// configured rate, not N times it.
class TokenBucket {
 public:
  using Clock = std::chrono::steady_clock;

  // bytes_per_sec == 0: no limit.
  TokenBucket(uint64_t bytes_per_sec, uint64_t burst);
  // Takes n bytes now and returns when they may pass (sleep until then).
  Clock::time_point Reserve(uint64_t n);
  void Acquire(uint64_t n);  // Reserve + sleep
  uint64_t rate() const { return rate_; }

 private:
  const uint64_t rate_;
  const double burst_;
  std::mutex mu_;
  double tokens_;  // may go negative: debt that later callers wait out
  Clock::time_point last_;
};

}  // namespace shoal::bench
