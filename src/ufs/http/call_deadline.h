// CallDeadline: an end time for every HTTP request the calling thread makes to
// an under-store while the scope lives.
//
// The client reads the under-store directly when workers fail, inside a call
// that already has a deadline (client.timeout). A store's own request_timeout
// (60 s for S3) and its retry pauses must not outlast that call, and the
// UnderStore interface has no deadline parameter on every method, so the
// client opens a CallDeadline around the store call and the HTTP transport
// (PerformHttp) and the retry loop (RunWithRetries) honour it: each request's
// timeout is cut to what is left, no retry starts after it, and once it has
// passed a request fails at once with kTimeout. Nested scopes keep the earlier
// end. Stores that are not HTTP (file://) do not look at it.
//
// Thread safety: the deadline is per thread; a scope must end on the thread
// that opened it.
#pragma once

#include <chrono>
#include <optional>

namespace shoal {

class CallDeadline {
 public:
  using Clock = std::chrono::steady_clock;

  explicit CallDeadline(Clock::time_point end) : saved_(current_) {
    if (!current_ || end < *current_) current_ = end;
  }
  ~CallDeadline() { current_ = saved_; }
  CallDeadline(const CallDeadline&) = delete;
  CallDeadline& operator=(const CallDeadline&) = delete;

  // The calling thread's deadline, if a scope is open.
  static std::optional<Clock::time_point> Current() { return current_; }

 private:
  std::optional<Clock::time_point> saved_;
  static inline thread_local std::optional<Clock::time_point> current_;
};

}  // namespace shoal
