// The retry loop shared by the object-store clients (S3/GCS, Azure Blob,
// WebHDFS): exponential backoff with jitter, a retry budget, and one deadline
// that covers every attempt and every pause. Which answers are worth retrying
// stays with each client; this file only decides when to try again.
//
// Thread safety: RunWithRetries() and BackoffDelay() may be called from any
// number of threads (the jitter generator is per thread).
#pragma once

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <optional>
#include <random>
#include <thread>
#include <type_traits>
#include <utility>

#include "ufs/http/call_deadline.h"

namespace shoal {

struct RetryPolicy {
  int max_retries = 0;                                 // attempts after the first
  std::chrono::milliseconds base_delay{50};            // pause before the first retry; doubles per retry
  std::chrono::milliseconds max_delay{2'000};          // cap on the doubled pause
  std::chrono::steady_clock::time_point deadline;      // no attempt starts after it
  // When the next pause would reach the deadline: true gives up at once,
  // false sleeps until the deadline and stops there.
  bool give_up_if_pause_reaches_deadline = false;
};

// The pause before retry number `retry` (0 for the first): the doubled delay,
// capped, with its upper half random so many clients spread out.
inline std::chrono::milliseconds BackoffDelay(const RetryPolicy& p, int retry) {
  thread_local std::mt19937_64 rng{std::random_device{}()};
  int64_t cap = p.base_delay.count();
  for (int i = 0; i < retry && cap < p.max_delay.count(); ++i) cap *= 2;
  cap = std::min<int64_t>(cap, p.max_delay.count());
  std::uniform_int_distribution<int64_t> jitter(0, std::max<int64_t>(cap / 2, 0));
  return std::chrono::milliseconds(cap / 2 + jitter(rng));
}

template <class T>
struct RetryOutcome {
  std::optional<T> last;    // what the last attempt returned; nullopt when none ran
  int attempts = 0;         // attempts made
  bool out_of_time = false;  // stopped because the deadline passed before the next attempt
};

// Calls attempt(time_left) until should_retry(result) is false, max_retries
// retries are spent, or the deadline stops it, pausing BackoffDelay() between
// attempts. time_left (milliseconds, > 0) is what remains of the deadline,
// which is the earlier of p.deadline and the thread's CallDeadline.
template <class Attempt, class ShouldRetry>
auto RunWithRetries(const RetryPolicy& policy, Attempt&& attempt, ShouldRetry&& should_retry)
    -> RetryOutcome<std::invoke_result_t<Attempt&, std::chrono::milliseconds>> {
  using Clock = std::chrono::steady_clock;
  using std::chrono::milliseconds;
  RetryPolicy p = policy;
  if (auto end = CallDeadline::Current()) p.deadline = std::min(p.deadline, *end);
  RetryOutcome<std::invoke_result_t<Attempt&, milliseconds>> out;
  for (;;) {
    auto left = std::chrono::duration_cast<milliseconds>(p.deadline - Clock::now());
    if (left.count() <= 0) {
      out.out_of_time = true;
      return out;
    }
    out.last.emplace(attempt(left));
    ++out.attempts;
    if (!should_retry(*out.last) || out.attempts > p.max_retries) return out;
    auto pause = BackoffDelay(p, out.attempts - 1);
    auto remaining = p.deadline - Clock::now();
    if (p.give_up_if_pause_reaches_deadline && pause >= remaining) return out;
    pause = std::min(pause, std::chrono::duration_cast<milliseconds>(remaining));
    if (pause.count() > 0) std::this_thread::sleep_for(pause);  // backoff, not synchronisation
  }
}

}  // namespace shoal
