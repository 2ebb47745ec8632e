// RepeatLimiter: holds back repeats of a log message, so that an event seen
// by many threads or Clients of a process (a worker going down) is one line.
//
// Not thread-safe: the log sink that owns it serialises its calls.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>

namespace shoal {

class RepeatLimiter {
 public:
  using Clock = std::chrono::steady_clock;

  explicit RepeatLimiter(Clock::duration interval) : interval_(interval) {}

  // Whether to print `text` now: nullopt when the same text was printed less
  // than `interval` ago (it is counted); else how many repeats were held back
  // since it was last printed (0 the first time).
  std::optional<uint64_t> Admit(std::string_view text, Clock::time_point now);

 private:
  struct Seen {
    Clock::time_point printed;
    uint64_t held = 0;
  };
  // Texts not printed for an interval are forgotten once this many are known,
  // so messages that differ every time (offsets, counts) cannot grow the map.
  static constexpr size_t kMaxTexts = 1024;

  Clock::duration interval_;
  std::unordered_map<std::string, Seen> seen_;
};

}  // namespace shoal
