#include "common/units.h"

#include <cctype>
#include <cmath>
#include <cstdio>
#include <string>

namespace shoal {
namespace {

std::string Lower(std::string_view s) {
  std::string out(s);
  for (auto& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

// Splits "1.5GiB" into 1.5 and "gib". Returns false when there is no number.
bool SplitNumber(std::string_view text, double* value, std::string* suffix) {
  while (!text.empty() && std::isspace(static_cast<unsigned char>(text.front()))) text.remove_prefix(1);
  while (!text.empty() && std::isspace(static_cast<unsigned char>(text.back()))) text.remove_suffix(1);
  size_t i = 0;
  while (i < text.size() && (std::isdigit(static_cast<unsigned char>(text[i])) || text[i] == '.')) ++i;
  if (i == 0) return false;
  std::string num(text.substr(0, i));
  char* end = nullptr;
  *value = std::strtod(num.c_str(), &end);
  if (end != num.c_str() + num.size()) return false;
  std::string_view rest = text.substr(i);
  while (!rest.empty() && std::isspace(static_cast<unsigned char>(rest.front()))) rest.remove_prefix(1);
  *suffix = Lower(rest);
  return true;
}

}  // namespace

Result<uint64_t> ParseSize(std::string_view text) {
  double v = 0;
  std::string suffix;
  if (!SplitNumber(text, &v, &suffix)) {
    return Err(Code::kInvalidArgument, "not a size: '" + std::string(text) + "' (examples: 4096, 64KiB, 1MiB, 10GiB)");
  }
  double mult = 0;
  if (suffix.empty() || suffix == "b") mult = 1;
  else if (suffix == "k" || suffix == "kib" || suffix == "ki") mult = 1024.0;
  else if (suffix == "m" || suffix == "mib" || suffix == "mi") mult = 1024.0 * 1024;
  else if (suffix == "g" || suffix == "gib" || suffix == "gi") mult = 1024.0 * 1024 * 1024;
  else if (suffix == "t" || suffix == "tib" || suffix == "ti") mult = 1024.0 * 1024 * 1024 * 1024;
  else if (suffix == "kb") mult = 1e3;
  else if (suffix == "mb") mult = 1e6;
  else if (suffix == "gb") mult = 1e9;
  else if (suffix == "tb") mult = 1e12;
  else {
    return Err(Code::kInvalidArgument, "unknown size unit '" + suffix + "' in '" + std::string(text) +
                                           "' (use B, KiB, MiB, GiB, TiB, KB, MB, GB or TB)");
  }
  double bytes = v * mult;
  if (bytes > 1.8e19) return Err(Code::kInvalidArgument, "size too large: '" + std::string(text) + "'");
  return static_cast<uint64_t>(std::llround(bytes));
}

Result<std::chrono::milliseconds> ParseDuration(std::string_view text) {
  double v = 0;
  std::string suffix;
  if (!SplitNumber(text, &v, &suffix)) {
    return Err(Code::kInvalidArgument, "not a duration: '" + std::string(text) + "' (examples: 500ms, 60s, 5m, 1h)");
  }
  double ms = 0;
  if (suffix == "ms") ms = v;
  else if (suffix.empty() || suffix == "s" || suffix == "sec") ms = v * 1000;
  else if (suffix == "m" || suffix == "min") ms = v * 60'000;
  else if (suffix == "h") ms = v * 3'600'000;
  else if (suffix == "d") ms = v * 86'400'000;
  else {
    return Err(Code::kInvalidArgument,
               "unknown duration unit '" + suffix + "' in '" + std::string(text) + "' (use ms, s, m, h or d)");
  }
  return std::chrono::milliseconds(static_cast<int64_t>(std::llround(ms)));
}

std::string FormatSize(uint64_t bytes) {
  static const char* kUnits[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB"};
  double v = static_cast<double>(bytes);
  int u = 0;
  while (v >= 1024 && u < 5) {
    v /= 1024;
    ++u;
  }
  char buf[32];
  if (u == 0) std::snprintf(buf, sizeof buf, "%llu B", static_cast<unsigned long long>(bytes));
  else std::snprintf(buf, sizeof buf, "%.1f %s", v, kUnits[u]);
  return buf;
}

std::string FormatDuration(std::chrono::milliseconds d) {
  auto ms = d.count();
  if (ms % 86'400'000 == 0 && ms) return std::to_string(ms / 86'400'000) + "d";
  if (ms % 3'600'000 == 0 && ms) return std::to_string(ms / 3'600'000) + "h";
  if (ms % 60'000 == 0 && ms) return std::to_string(ms / 60'000) + "m";
  if (ms % 1000 == 0) return std::to_string(ms / 1000) + "s";
  return std::to_string(ms) + "ms";
}

}  // namespace shoal
