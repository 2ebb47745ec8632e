#include "common/path_rules.h"

#include <algorithm>

namespace shoal {

bool PathRules::Covers(std::string_view prefix, std::string_view path) {
  if (prefix == "/") return !path.empty() && path[0] == '/';
  if (!path.starts_with(prefix)) return false;
  return path.size() == prefix.size() || path[prefix.size()] == '/';
}

Result<PathRules> PathRules::Make(std::vector<PathRule> rules) {
  for (auto& r : rules) {
    if (r.path.empty() || r.path[0] != '/') {
      return Err(Code::kInvalidArgument, "rule path '" + r.path + "' must be an absolute path such as /data/val");
    }
    while (r.path.size() > 1 && r.path.back() == '/') r.path.pop_back();
  }
  std::sort(rules.begin(), rules.end(), [](const PathRule& a, const PathRule& b) { return a.path < b.path; });
  for (size_t i = 1; i < rules.size(); ++i) {
    if (rules[i].path == rules[i - 1].path) {
      return Err(Code::kInvalidArgument, "two rules for '" + rules[i].path + "': merge them into one");
    }
  }
  PathRules out;
  out.rules_ = std::move(rules);
  return out;
}

EffectiveRule PathRules::For(std::string_view path) const {
  EffectiveRule e;
  // Sorted by path, a covering prefix sorts before everything it covers, so a
  // later match is at least as specific and overrides what it sets.
  for (size_t i = 0; i < rules_.size(); ++i) {
    const PathRule& r = rules_[i];
    if (std::string_view(r.path) > path) break;  // every prefix of `path` sorts at or before it
    if (!Covers(r.path, path)) continue;
    if (r.pin) e.pin = *r.pin;
    if (r.priority) e.priority = *r.priority;
    if (r.ttl) e.ttl = *r.ttl;
    if (r.admit) e.admit = *r.admit;
    if (r.write_mode) e.write_mode = r.write_mode;
    if (r.replicas) e.replicas = r.replicas;
    if (r.quota || r.cluster_quota) e.quotas.push_back(i);
  }
  return e;
}

const PathRule* PathRules::Find(std::string_view path) const {
  auto it = std::lower_bound(rules_.begin(), rules_.end(), path,
                             [](const PathRule& r, std::string_view p) { return r.path < p; });
  return it != rules_.end() && it->path == path ? &*it : nullptr;
}

}  // namespace shoal
