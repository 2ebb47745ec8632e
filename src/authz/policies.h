// Ranger policies for the HDFS service definition, as data: what a
// ServicePolicies JSON document (Ranger admin's policy download, or a file of
// the same shape) holds, parsed and validated, ready to compile into a
// PolicyEngine (authz/policy_engine.h).
//
// The resource of every policy is `path` (a Shoal namespace path); the
// access types are read, write and execute. Everything else Ranger can put in
// a policy either maps onto this model or is refused by name when it would
// change a decision: data-masking and row-filter policies and those on other
// resources are left out, and what has conditions may deny but never allow,
// each with a line in `notes`.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "shoal/status.h"

namespace shoal::authz {

// HDFS service definition's access types, as bits so an item holds a set.
enum class AccessType : uint8_t { kRead = 1, kWrite = 2, kExecute = 4 };

std::string_view AccessTypeName(AccessType a);
// "read" | "write" | "execute" (case-insensitive, as Ranger stores them lower case).
Result<AccessType> ParseAccessType(std::string_view name);

// One allow, deny or exception item of a policy: who (users, groups, roles)
// and which accesses. `{USER}` in users stands for every user; the group
// `public` for everyone, anonymous included.
struct PolicyItem {
  uint8_t accesses = 0;  // AccessType bits whose isAllowed is true
  std::vector<std::string> users;
  std::vector<std::string> groups;
  std::vector<std::string> roles;
  bool any_user = false;      // users holds {USER}
  bool public_group = false;  // groups holds public
  // Item conditions cannot be evaluated here: an allow item or a deny
  // exception with conditions never matches; a deny item or an allow
  // exception with conditions always does (a policy we cannot read fully
  // never grants more than it would).
  bool has_conditions = false;
};

// The `path` resource: values with wildcards (`*`, `?`) and the `{USER}`
// macro, isExcludes and isRecursive.
struct PathResource {
  std::vector<std::string> values;
  bool excludes = false;
  bool recursive = false;
};

struct Policy {
  int64_t id = 0;
  std::string name;
  bool enabled = true;
  int priority = 0;  // 0 normal, 1 override (evaluated first)
  bool deny_all_else = false;
  bool deny_only = false;  // policy conditions or validity schedules: its allows never count
  PathResource path;
  std::vector<PolicyItem> allow;
  std::vector<PolicyItem> deny;
  std::vector<PolicyItem> allow_exceptions;
  std::vector<PolicyItem> deny_exceptions;
};

// A Ranger role: its members are users, groups and other roles.
struct Role {
  std::string name;
  std::vector<std::string> users;
  std::vector<std::string> groups;
  std::vector<std::string> roles;
};

struct PolicySet {
  std::string service;   // serviceName
  int64_t version = -1;  // policyVersion
  std::vector<Policy> policies;
  std::vector<Role> roles;  // from a `rangerRoles` list beside the policies
  // serviceConfig's ranger.plugin.super.users / .groups: always allowed.
  std::vector<std::string> super_users;
  std::vector<std::string> super_groups;
  std::vector<std::string> notes;  // "policy 7 (name): why", policies left out or only denying
};

// Parses a ServicePolicies document. kInvalidArgument naming `source` and the
// field when it is not one (truncated JSON, a policy without a path resource,
// an unknown access type): a partial download never parses.
Result<PolicySet> ParseServicePolicies(std::string_view json, std::string_view source);

// Parses Ranger admin's roles download (RangerRoles: roleVersion and
// rangerRoles): the version and the roles.
Result<std::pair<int64_t, std::vector<Role>>> ParseRangerRoles(std::string_view json, std::string_view source);

// Reads and parses a file; errors name the file.
Result<PolicySet> LoadServicePolicies(const std::string& path);

}  // namespace shoal::authz
