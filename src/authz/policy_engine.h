// PolicyEngine: decides one access to one namespace path for one user, the
// way Ranger's policy engine does for its HDFS service definition.
//
// Evaluation (docs/authorization.md spells out each rule with its source in
// Ranger, and src/authz/policy_engine_test.cc tests each one):
//   - Only enabled policies whose path resource matches the request's path
//     take part. A value matches the path itself; with isRecursive also every
//     path below it. `*` and `?` are wildcards, `{USER}` the request's user;
//     isExcludes inverts the match. Paths are case-sensitive.
//   - Policies go in order of priority (override before normal); within a
//     priority, those with deny items (or isDenyAllElse) before the others.
//   - In one policy: a deny item that matches (user, group, role, access),
//     unless one of its deny exceptions matches too, denies. Else an allow
//     item that matches, unless an allow exception matches too, allows. An
//     exception only removes a match of its own kind: an allow exception
//     never denies by itself. isDenyAllElse denies whatever no allow item
//     allowed.
//   - A deny decides. An allow stands unless a later policy of the same
//     priority denies; a decision of a higher priority is final.
//   - The service's super users and groups (serviceConfig
//     ranger.plugin.super.users/.groups) are always allowed.
//   - No policy decided: not determined (the caller's fallback applies).
//
// Thread safety: immutable after construction; Evaluate is safe from any
// thread. Cost: a few hash lookups (one per path component) and the few
// policies indexed under them, not a scan of every policy.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "authz/policies.h"

namespace shoal::authz {

struct AccessRequest {
  std::string_view user;  // "" for anonymous: only the `public` group matches it
  std::span<const std::string> groups;
  std::string_view path;  // a normalized namespace path: "/data/train/x"
  AccessType access = AccessType::kRead;
};

struct Decision {
  enum class Outcome : uint8_t { kAllowed, kDenied, kNotDetermined };
  Outcome outcome = Outcome::kNotDetermined;
  const Policy* policy = nullptr;  // the deciding policy (owned by the engine)
  bool super_user = false;         // allowed as a super user or group of the service
  bool allowed() const { return outcome == Outcome::kAllowed; }
  bool determined() const { return outcome != Outcome::kNotDetermined; }
};

class PolicyEngine {
 public:
  explicit PolicyEngine(PolicySet set);
  ~PolicyEngine();
  PolicyEngine(const PolicyEngine&) = delete;
  PolicyEngine& operator=(const PolicyEngine&) = delete;

  Decision Evaluate(const AccessRequest& request) const;

  const std::string& service() const { return set_.service; }
  int64_t version() const { return set_.version; }
  size_t policy_count() const { return set_.policies.size(); }
  const std::vector<std::string>& notes() const { return set_.notes; }

 private:
  struct CompiledValue;
  struct Compiled;

  // Positions in compiled_ of the policies that may match `path` for `user`, in order.
  void Candidates(std::string_view path, std::string_view user, std::vector<uint32_t>* found) const;
  bool PathMatches(const Compiled& c, std::string_view path, std::string_view user) const;
  // The roles of a user with these groups (nested roles included).
  std::vector<std::string_view> RolesOf(std::string_view user, std::span<const std::string> groups) const;

  PolicySet set_;
  std::vector<std::unique_ptr<Compiled>> compiled_;  // in evaluation order
  // Literal component prefix of a value ("/data/train" for "/data/train/*.rec")
  // -> policies holding such a value, by position in compiled_.
  struct Hash {
    using is_transparent = void;
    size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
  };
  struct PrefixIndex : std::unordered_map<std::string, std::vector<uint32_t>, Hash, std::equal_to<>> {
    size_t depth = 0;  // the most components a key has
  };
  PrefixIndex by_prefix_;
  // Values with {USER}: the text before the macro -> an index of what follows it.
  std::map<std::string, PrefixIndex> by_user_prefix_;
  std::vector<uint32_t> everywhere_;  // excludes values: may match any path
  std::unordered_map<std::string, std::vector<std::string>> roles_of_user_;
  std::unordered_map<std::string, std::vector<std::string>> roles_of_group_;
  std::unordered_map<std::string, std::vector<std::string>> roles_of_role_;
};

// Normalizes a path resource value or a request path for matching: one
// leading '/', no trailing '/' (but "/" itself), runs of '/' collapsed.
std::string NormalizePath(std::string_view path);

}  // namespace shoal::authz
