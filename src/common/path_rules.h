// The `rules:` table matched against namespace paths: the one place that says
// which rule fields apply to a path (README "Path rules"). The cache asks it
// for pin, priority, ttl, quota and admission; the client for write_mode and
// replicas. A PathRules is immutable; a changed table is a new snapshot.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/config.h"

namespace shoal {

// What the rules say about one path: for each field, the value of the longest
// matching prefix that sets it, else the default.
struct EffectiveRule {
  bool pin = false;
  Priority priority = Priority::kMedium;
  std::chrono::milliseconds ttl{0};  // 0: pages never expire
  bool admit = true;                 // false: the path's pages are never cached
  std::optional<WriteMode> write_mode;  // unset: the mount's write_mode
  std::optional<int> replicas;          // unset: the caller's default
  // Every matching rule with a quota or cluster_quota, outermost first: a page
  // counts against each of them. Indexes into PathRules::rules().
  std::vector<size_t> quotas;
  bool operator==(const EffectiveRule&) const = default;
};

class PathRules {
 public:
  PathRules() = default;
  // Checks the paths (absolute, one rule per path) and sorts the rules.
  static Result<PathRules> Make(std::vector<PathRule> rules);

  EffectiveRule For(std::string_view path) const;
  // The rule for exactly `path`, or nullptr.
  const PathRule* Find(std::string_view path) const;
  const std::vector<PathRule>& rules() const { return rules_; }
  bool empty() const { return rules_.empty(); }

  // True when `path` is `prefix` or lies below it ("/a/b" is under "/a", "/ab" is not).
  static bool Covers(std::string_view prefix, std::string_view path);

 private:
  std::vector<PathRule> rules_;  // sorted by path, so a prefix comes before what it covers
};

}  // namespace shoal
