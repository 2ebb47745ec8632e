#include "common/repeat_limiter.h"

#include <iterator>

namespace shoal {

std::optional<uint64_t> RepeatLimiter::Admit(std::string_view text, Clock::time_point now) {
  auto it = seen_.find(std::string(text));
  if (it != seen_.end()) {
    if (now - it->second.printed < interval_) {
      ++it->second.held;
      return std::nullopt;
    }
    uint64_t held = it->second.held;
    it->second = Seen{now, 0};
    return held;
  }
  if (seen_.size() >= kMaxTexts) {
    // A repeat of a forgotten text is printed again with no count: harmless.
    for (auto old = seen_.begin(); old != seen_.end();) {
      old = now - old->second.printed >= interval_ ? seen_.erase(old) : std::next(old);
    }
  }
  if (seen_.size() < kMaxTexts) seen_.emplace(std::string(text), Seen{now, 0});
  return 0;
}

}  // namespace shoal
