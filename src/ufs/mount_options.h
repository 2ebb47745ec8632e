// Mount options: each backend declares the options its mounts accept once, as
// a table of OptionSpec. The table drives parsing (typed values), validation
// (names, kinds, bounds), the error messages (the valid names, the nearest
// one to a typo) and the README's option tables (README.md must list exactly
// what OptionTableMarkdown prints; mount_options_test checks it).
//
//   constexpr OptionSpec kOptions[] = {option::Int("max_retries", 0, 100, "retries (3)"), ...};
//   auto o = MountOptions::Parse("s3", kOptions, mount.options);
//   if (auto n = o->Int("max_retries")) retries = *n;
//
// Messages never contain the value of a kSecret option.
#pragma once

#include <chrono>
#include <cstdint>
#include <limits>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "shoal/status.h"

namespace shoal {

enum class OptionKind {
  kString,    // any non-empty text
  kSecret,    // non-empty text that no message or log repeats
  kBool,      // true/false (also yes/no, on/off, 1/0)
  kInt,       // a whole number in [min, max]
  kSize,      // "8MiB": bytes in [min, max]
  kDuration,  // "30s": milliseconds in [min, max]
  kChoice,    // one of `choices`, separated by '|'
  kFile,      // a path to a file this process can read
};

struct OptionSpec {
  std::string_view name;
  OptionKind kind = OptionKind::kString;
  int64_t min = 0;  // kInt, kSize (bytes), kDuration (ms): inclusive bounds
  int64_t max = std::numeric_limits<int64_t>::max();
  std::string_view choices;  // kChoice: "unsigned|signed" (the first is the default)
  std::string_view help;     // what it does and its default, for the README
};
using OptionTable = std::span<const OptionSpec>;

// Table rows, one per kind: option::Int("max_retries", 0, 100, "retries (3)").
namespace option {
inline constexpr int64_t kNoMax = std::numeric_limits<int64_t>::max();
constexpr OptionSpec Make(std::string_view name, OptionKind kind, int64_t min, int64_t max, std::string_view choices,
                          std::string_view help) {
  OptionSpec s;
  s.name = name;
  s.kind = kind;
  s.min = min;
  s.max = max;
  s.choices = choices;
  s.help = help;
  return s;
}
constexpr OptionSpec Text(std::string_view n, std::string_view help) { return Make(n, OptionKind::kString, 0, kNoMax, {}, help); }
constexpr OptionSpec Secret(std::string_view n, std::string_view help) { return Make(n, OptionKind::kSecret, 0, kNoMax, {}, help); }
constexpr OptionSpec Bool(std::string_view n, std::string_view help) { return Make(n, OptionKind::kBool, 0, kNoMax, {}, help); }
constexpr OptionSpec Int(std::string_view n, int64_t min, int64_t max, std::string_view help) {
  return Make(n, OptionKind::kInt, min, max, {}, help);
}
constexpr OptionSpec Size(std::string_view n, int64_t min, int64_t max, std::string_view help) {
  return Make(n, OptionKind::kSize, min, max, {}, help);
}
constexpr OptionSpec Duration(std::string_view n, int64_t min_ms, std::string_view help) {
  return Make(n, OptionKind::kDuration, min_ms, kNoMax, {}, help);
}
constexpr OptionSpec Choice(std::string_view n, std::string_view choices, std::string_view help) {
  return Make(n, OptionKind::kChoice, 0, kNoMax, choices, help);
}
constexpr OptionSpec File(std::string_view n, std::string_view help) { return Make(n, OptionKind::kFile, 0, kNoMax, {}, help); }
}  // namespace option

// A kBool option's text: true/yes/on/1, false/no/off/0; nullopt otherwise.
std::optional<bool> ParseBoolText(std::string_view v);

// A mount's options, checked against a table. Getters return nullopt (or "")
// for options that are not set; asking for an option the table does not hold,
// or as another kind, is a bug.
class MountOptions {
 public:
  // Checks every option: unknown names (naming the nearest known one and the
  // full list), empty values and each value's kind and bounds. `scheme` names
  // the backend in messages ("s3" -> "unknown s3:// option ...").
  static Result<MountOptions> Parse(std::string_view scheme, OptionTable table,
                                    const std::map<std::string, std::string>& options);

  bool has(std::string_view name) const;
  // The text as given (any kind); "" when unset.
  std::string String(std::string_view name) const;
  std::optional<bool> Bool(std::string_view name) const;
  std::optional<int64_t> Int(std::string_view name) const;
  std::optional<uint64_t> Size(std::string_view name) const;
  std::optional<std::chrono::milliseconds> Duration(std::string_view name) const;

 private:
  struct Value {
    OptionKind kind;
    std::string text;
    int64_t number = 0;  // kInt, kSize, kDuration (ms), kBool (0/1)
  };
  const Value* Find(std::string_view name, OptionKind kind) const;

  std::map<std::string, Value, std::less<>> values_;
};

// "a, b, c": every name in the table.
std::string OptionNames(OptionTable table);
// The table's name closest to `name` by edit distance (transpositions count
// one), or "" when none is close enough to be a likely typo.
std::string NearestOptionName(std::string_view name, OptionTable table);
// How a value of this option is written: "true/false", "0..100", "size", ...
std::string DescribeOptionValue(const OptionSpec& spec);
// The README's table of the options: "| option | value | what it does |" rows.
std::string OptionTableMarkdown(OptionTable table);

}  // namespace shoal
