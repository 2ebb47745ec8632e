#include "cache/policy/registry.h"

#include <algorithm>
#include <map>
#include <mutex>

namespace shoal {
namespace {

struct Registry {
  std::mutex mu;
  std::map<std::string, EvictionPolicyInfo, std::less<>> by_name;
};

// A function-local static: registrations run from other files' static
// initialisers, in an order C++ does not fix.
Registry& TheRegistry() {
  static Registry r;
  return r;
}

}  // namespace

bool RegisterEvictionPolicy(EvictionPolicyInfo info) {
  auto& r = TheRegistry();
  std::lock_guard lock(r.mu);
  std::string name = info.name;
  r.by_name.insert_or_assign(std::move(name), std::move(info));
  return true;
}

Result<std::unique_ptr<EvictionPolicy>> MakeEvictionPolicy(std::string_view name) {
  if (name.empty()) name = kDefaultEvictionPolicy;
  auto& r = TheRegistry();
  {
    std::lock_guard lock(r.mu);
    if (auto it = r.by_name.find(name); it != r.by_name.end()) return it->second.make();
  }
  return Err(Code::kInvalidArgument, "unknown eviction policy '" + std::string(name) +
                                         "': set worker.eviction to one of " + EvictionPolicyNames());
}

std::vector<EvictionPolicyInfo> EvictionPolicies() {
  auto& r = TheRegistry();
  std::lock_guard lock(r.mu);
  std::vector<EvictionPolicyInfo> out;
  for (const auto& [name, info] : r.by_name) out.push_back(info);
  return out;
}

std::string EvictionPolicyNames() {
  std::string out;
  for (const auto& p : EvictionPolicies()) out += (out.empty() ? "" : ", ") + p.name;
  return out.empty() ? "(none registered)" : out;
}

}  // namespace shoal
