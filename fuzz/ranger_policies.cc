// Ranger policy documents and decisions (authz/policies.h, authz/policy_engine.h):
// what a worker downloads from Ranger admin or reads from authz.policy_file,
// and what every request then asks of it. The input is a request line, a
// newline, then the document:
//   USER SP GROUP,GROUP SP PATH SP ACCESS '\n' SERVICEPOLICIES-JSON
// A document either parses or is refused with a message naming its source
// (never a crash, never a partial set); the roles download parses the same
// way. A parsed set decides any request without crashing, and the same
// request gets the same decision twice (the engine keeps no per-request state).
#include <string>
#include <vector>

#include "authz/policies.h"
#include "authz/policy_engine.h"
#include "fuzz_check.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace shoal::authz;
  shoal::fuzz::FuzzInput in(data, size);
  std::string user(in.Until(' '));
  std::vector<std::string> groups;
  std::string_view group_list = in.Until(' ');
  while (!group_list.empty() && groups.size() < 16) {
    auto comma = group_list.find(',');
    groups.emplace_back(group_list.substr(0, comma));
    group_list = comma == std::string_view::npos ? std::string_view() : group_list.substr(comma + 1);
  }
  std::string path(in.Until(' '));
  auto access = ParseAccessType(in.Until('\n'));
  std::string_view doc = in.rest();

  auto roles = ParseRangerRoles(doc, "fuzz");
  if (!roles) FUZZ_CHECK(roles.error().message().starts_with("fuzz"), "%s", roles.error().message().c_str());
  auto set = ParseServicePolicies(doc, "fuzz");
  if (!set) {
    FUZZ_CHECK(set.error().message().starts_with("fuzz"), "%s", set.error().message().c_str());
    return 0;
  }
  PolicyEngine engine(std::move(*set));
  const AccessType a = access ? *access : AccessType::kRead;
  Decision first = engine.Evaluate({user, groups, path, a});
  Decision again = engine.Evaluate({user, groups, path, a});
  FUZZ_CHECK(first.outcome == again.outcome && first.policy == again.policy, "two decisions differ");
  if (first.policy != nullptr) FUZZ_CHECK(first.determined(), "a deciding policy without a decision");
  return 0;
}
