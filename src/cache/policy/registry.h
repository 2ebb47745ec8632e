// The eviction policies by name: `worker.eviction` in the config picks one.
//
// Each policy registers itself from its own file with
// SHOAL_REGISTER_EVICTION_POLICY; nothing else names it. The policy library is
// linked whole (CMake's WHOLE_ARCHIVE) so that no registration is dropped.
//
// Thread safety: registration happens during static initialisation; lookups
// afterwards are safe from any thread.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "cache/policy/eviction_policy.h"
#include "shoal/status.h"

namespace shoal {

// The policy a config that names none gets: bench/policy_sim shows it never
// worse than LRU on its Zipf traces and far better on shuffled epochs
// (docs/benchmarks.md, "Eviction policies").
inline constexpr std::string_view kDefaultEvictionPolicy = "epoch";

struct EvictionPolicyInfo {
  std::string name;
  std::string summary;  // one line, for docs and errors
  std::function<std::unique_ptr<EvictionPolicy>()> make;
};

// Adds a policy. Returns true (for use in a static initialiser).
bool RegisterEvictionPolicy(EvictionPolicyInfo info);

// The policy named `name` ("" is the default). An unknown name is
// kInvalidArgument listing the registered ones.
Result<std::unique_ptr<EvictionPolicy>> MakeEvictionPolicy(std::string_view name);

// Every registered policy, sorted by name.
std::vector<EvictionPolicyInfo> EvictionPolicies();

// "fifo, lfu, lru, ..." for messages.
std::string EvictionPolicyNames();

}  // namespace shoal

#define SHOAL_REGISTER_EVICTION_POLICY(ident, name, summary, ...)                           \
  [[maybe_unused]] static const bool kRegistered_##ident = ::shoal::RegisterEvictionPolicy( \
      {name, summary, [] { return std::unique_ptr<::shoal::EvictionPolicy>(__VA_ARGS__); }})
