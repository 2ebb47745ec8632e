// Human units for sizes and durations, as written in configs and on the command line.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>

#include "shoal/status.h"

namespace shoal {

inline constexpr uint64_t kKiB = 1024;
inline constexpr uint64_t kMiB = 1024 * kKiB;
inline constexpr uint64_t kGiB = 1024 * kMiB;

// "4096", "64KiB", "1MiB", "10GiB", "1.5G", "100MB" (KB/MB/GB are decimal; K/M/G and KiB.. binary).
Result<uint64_t> ParseSize(std::string_view text);
// "500ms", "60s", "5m", "1h", "2d"; a bare number is seconds.
Result<std::chrono::milliseconds> ParseDuration(std::string_view text);

// 1536 -> "1.5 KiB"
std::string FormatSize(uint64_t bytes);
std::string FormatDuration(std::chrono::milliseconds d);

}  // namespace shoal
