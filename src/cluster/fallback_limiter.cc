#include "cluster/fallback_limiter.h"

#include <algorithm>
#include <string>
#include <thread>

#include "common/units.h"

namespace shoal {

FallbackLimiter::FallbackLimiter(uint64_t bytes_per_second, uint64_t requests_per_second) : last_(Clock::now()) {
  bytes_.rate = static_cast<double>(bytes_per_second);
  bytes_.tokens = bytes_.rate;
  requests_.rate = static_cast<double>(requests_per_second);
  requests_.tokens = requests_.rate;
}

double FallbackLimiter::waited_seconds() const { return waited_us_.load(std::memory_order_relaxed) / 1e6; }

Status FallbackLimiter::Acquire(uint64_t bytes, Clock::time_point deadline, std::string_view what) {
  if (bytes_.rate <= 0 && requests_.rate <= 0) return {};
  double wait = 0;
  {
    std::lock_guard lock(mu_);
    const auto now = Clock::now();
    const double elapsed = std::chrono::duration<double>(now - last_).count();
    last_ = now;
    bytes_.Refill(elapsed);
    requests_.Refill(elapsed);
    wait = std::max(bytes_.WaitFor(static_cast<double>(bytes)), requests_.WaitFor(1));
    if (wait > 0 && now + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(wait)) > deadline) {
      rejected_.fetch_add(1, std::memory_order_relaxed);
      std::string limits;
      if (bytes_.rate > 0) limits = "client.fallback_rate " + FormatSize(static_cast<uint64_t>(bytes_.rate)) + "/s";
      if (requests_.rate > 0) {
        limits += (limits.empty() ? "" : ", ") + std::string("client.fallback_requests ") +
                  std::to_string(static_cast<uint64_t>(requests_.rate)) + "/s";
      }
      return Status(
          Code::kUnavailable,
          std::string(what) + ": under-store fallback rate-limited (" + limits +
              "): the call's deadline would pass before its turn; bring the workers back, or raise the limit");
    }
    // Reserve now, so callers queue in order instead of racing for refills.
    if (bytes_.rate > 0) bytes_.tokens -= static_cast<double>(bytes);
    if (requests_.rate > 0) requests_.tokens -= 1;
  }
  if (wait > 0) {
    waits_.fetch_add(1, std::memory_order_relaxed);
    waited_us_.fetch_add(static_cast<uint64_t>(wait * 1e6), std::memory_order_relaxed);
    std::this_thread::sleep_for(std::chrono::duration<double>(wait));
  }
  return {};
}

}  // namespace shoal
