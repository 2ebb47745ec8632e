// The policy engine against Ranger's documented semantics for the HDFS
// service definition (docs/authorization.md lists each rule and where Ranger
// implements it). Tests named "...RangerNotIntuition" are the cases where
// Ranger's answer is not the one a reader would guess.
#include "authz/policy_engine.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "authz/policies.h"

namespace shoal::authz {
namespace {

using Json = nlohmann::json;
using Outcome = Decision::Outcome;

Json Item(std::vector<std::string> accesses, std::vector<std::string> users, std::vector<std::string> groups = {},
          std::vector<std::string> roles = {}) {
  Json acc = Json::array();
  for (const auto& a : accesses) acc.push_back({{"type", a}, {"isAllowed", true}});
  return {{"accesses", acc}, {"users", users}, {"groups", groups}, {"roles", roles}};
}

struct P {
  int64_t id;
  std::vector<std::string> values;
  bool recursive = true;
  std::vector<Json> allow = {};
  std::vector<Json> deny = {};
  std::vector<Json> allow_ex = {};
  std::vector<Json> deny_ex = {};
  int priority = 0;
  bool enabled = true;
  bool excludes = false;
  bool deny_all_else = false;
};

Json PolicyJson(const P& p) {
  return {{"id", p.id},
          {"name", "p" + std::to_string(p.id)},
          {"isEnabled", p.enabled},
          {"policyPriority", p.priority},
          {"isDenyAllElse", p.deny_all_else},
          {"resources", {{"path", {{"values", p.values}, {"isRecursive", p.recursive}, {"isExcludes", p.excludes}}}}},
          {"policyItems", p.allow},
          {"denyPolicyItems", p.deny},
          {"allowExceptions", p.allow_ex},
          {"denyExceptions", p.deny_ex}};
}

std::unique_ptr<PolicyEngine> Engine(const std::vector<P>& policies, Json extra = Json::object()) {
  Json doc = {{"serviceName", "shoal"}, {"policyVersion", 7}, {"policies", Json::array()}};
  for (const auto& p : policies) doc["policies"].push_back(PolicyJson(p));
  for (auto it = extra.begin(); it != extra.end(); ++it) doc[it.key()] = it.value();
  auto set = ParseServicePolicies(doc.dump(), "test");
  EXPECT_TRUE(set.has_value()) << set.error().ToString();
  return std::make_unique<PolicyEngine>(std::move(*set));
}

struct Ask {
  std::string user;
  std::vector<std::string> groups;
  std::string path;
  AccessType access = AccessType::kRead;
};

// "allow:3", "deny:5" or "none".
std::string Decide(const PolicyEngine& e, const Ask& a) {
  Decision d = e.Evaluate({a.user, a.groups, a.path, a.access});
  if (!d.determined()) return "none";
  std::string id = d.policy ? std::to_string(d.policy->id) : "super";
  return (d.allowed() ? "allow:" : "deny:") + id;
}

TEST(PolicyEngineTest, AllowItemMatchesUserGroupAndAccess) {
  auto e = Engine({{.id = 1, .values = {"/data"}, .allow = {Item({"read"}, {"alice"}, {"ml"})}}});
  EXPECT_EQ(Decide(*e, {"alice", {}, "/data/x"}), "allow:1");
  EXPECT_EQ(Decide(*e, {"bob", {"ml"}, "/data/x"}), "allow:1");
  EXPECT_EQ(Decide(*e, {"bob", {"web"}, "/data/x"}), "none");
  EXPECT_EQ(Decide(*e, {"alice", {}, "/data/x", AccessType::kWrite}), "none");
  EXPECT_EQ(Decide(*e, {"alice", {}, "/other"}), "none");
}

TEST(PolicyEngineTest, RecursiveValueMatchesItselfAndBelowButNotASiblingPrefix) {
  auto e = Engine({{.id = 1, .values = {"/data"}, .allow = {Item({"read"}, {"u"})}}});
  EXPECT_EQ(Decide(*e, {"u", {}, "/data"}), "allow:1");
  EXPECT_EQ(Decide(*e, {"u", {}, "/data/a/b/c"}), "allow:1");
  EXPECT_EQ(Decide(*e, {"u", {}, "/database"}), "none");
}

TEST(PolicyEngineTest, NonRecursivePlainValueMatchesOnlyItself) {
  auto e = Engine({{.id = 1, .values = {"/data"}, .recursive = false, .allow = {Item({"read"}, {"u"})}}});
  EXPECT_EQ(Decide(*e, {"u", {}, "/data"}), "allow:1");
  EXPECT_EQ(Decide(*e, {"u", {}, "/data/a"}), "none");
}

TEST(PolicyEngineTest, StarCrossesSlashEvenWithoutRecursive_RangerNotIntuition) {
  // Ranger's glob `*` matches '/' too: a non-recursive /data/* covers the whole subtree.
  auto e = Engine({{.id = 1, .values = {"/data/*"}, .recursive = false, .allow = {Item({"read"}, {"u"})}}});
  EXPECT_EQ(Decide(*e, {"u", {}, "/data/a"}), "allow:1");
  EXPECT_EQ(Decide(*e, {"u", {}, "/data/a/b/c"}), "allow:1");
  // ... but not /data itself.
  EXPECT_EQ(Decide(*e, {"u", {}, "/data"}), "none");
}

TEST(PolicyEngineTest, RecursiveTrailingSlashDoesNotCoverTheDirectoryItself_RangerNotIntuition) {
  auto e = Engine({{.id = 1, .values = {"/data/"}, .allow = {Item({"read"}, {"u"})}}});
  EXPECT_EQ(Decide(*e, {"u", {}, "/data/x/y"}), "allow:1");
  EXPECT_EQ(Decide(*e, {"u", {}, "/data"}), "none");
}

TEST(PolicyEngineTest, QuestionMarkIsOneCharacterAndGlobPrefixIsNotAComponent) {
  auto e = Engine({{.id = 1, .values = {"/data/set?/*.rec"}, .recursive = false, .allow = {Item({"read"}, {"u"})}},
                   {.id = 2, .values = {"/data*"}, .recursive = false, .allow = {Item({"write"}, {"u"})}}});
  EXPECT_EQ(Decide(*e, {"u", {}, "/data/set1/a.rec"}), "allow:1");
  EXPECT_EQ(Decide(*e, {"u", {}, "/data/set12/a.rec"}), "none");
  EXPECT_EQ(Decide(*e, {"u", {}, "/data/set1/a.txt"}), "none");
  // A non-recursive glob /data* matches /database (a recursive plain /data never does).
  EXPECT_EQ(Decide(*e, {"u", {}, "/database", AccessType::kWrite}), "allow:2");
}

TEST(PolicyEngineTest, RecursiveWildcardMatchesBelowAMatchingAncestor) {
  auto e = Engine({{.id = 1, .values = {"/home/*/a.txt"}, .allow = {Item({"read"}, {"u"})}}});
  EXPECT_EQ(Decide(*e, {"u", {}, "/home/1/a.txt"}), "allow:1");
  EXPECT_EQ(Decide(*e, {"u", {}, "/home/1/a.txt/x"}), "allow:1");
  EXPECT_EQ(Decide(*e, {"u", {}, "/home/1/b.txt"}), "none");
}

TEST(PolicyEngineTest, PathsAreCaseSensitiveAsHdfsDefinesThem) {
  auto e = Engine({{.id = 1, .values = {"/Data"}, .allow = {Item({"read"}, {"u"})}}});
  EXPECT_EQ(Decide(*e, {"u", {}, "/data/x"}), "none");
  EXPECT_EQ(Decide(*e, {"u", {}, "/Data/x"}), "allow:1");
}

TEST(PolicyEngineTest, MatchAnyValueAndRootValue) {
  auto e = Engine({{.id = 1, .values = {"*"}, .recursive = false, .allow = {Item({"read"}, {"u"})}},
                   {.id = 2, .values = {"/"}, .allow = {Item({"write"}, {"u"})}}});
  EXPECT_EQ(Decide(*e, {"u", {}, "/any/where"}), "allow:1");
  EXPECT_EQ(Decide(*e, {"u", {}, "/any/where", AccessType::kWrite}), "allow:2");
}

TEST(PolicyEngineTest, ExcludesAppliesToEveryPathTheValuesDoNotMatch) {
  auto e = Engine({{.id = 1, .values = {"/secret"}, .allow = {Item({"read"}, {"u"})}, .excludes = true}});
  EXPECT_EQ(Decide(*e, {"u", {}, "/data/x"}), "allow:1");
  EXPECT_EQ(Decide(*e, {"u", {}, "/secret"}), "none");
  EXPECT_EQ(Decide(*e, {"u", {}, "/secret/deep/x"}), "none");  // recursive: the whole subtree is excluded
}

TEST(PolicyEngineTest, UserMacroInAValueIsTheRequestingUser) {
  auto e = Engine({{.id = 1, .values = {"/home/{USER}"}, .allow = {Item({"read", "write"}, {}, {"public"})}}});
  EXPECT_EQ(Decide(*e, {"alice", {}, "/home/alice/x", AccessType::kWrite}), "allow:1");
  EXPECT_EQ(Decide(*e, {"alice", {}, "/home/bob/x"}), "none");
  EXPECT_EQ(Decide(*e, {"", {}, "/home/x"}), "none");  // anonymous: {USER} names no one
}

TEST(PolicyEngineTest, UserMacroInUsersAndPublicGroupMatchEveryone_RangerNotIntuition) {
  auto e = Engine({{.id = 1, .values = {"/a"}, .allow = {Item({"read"}, {"{USER}"})}},
                   {.id = 2, .values = {"/b"}, .allow = {Item({"read"}, {}, {"public"})}}});
  EXPECT_EQ(Decide(*e, {"anyone", {}, "/a/x"}), "allow:1");
  EXPECT_EQ(Decide(*e, {"anyone", {}, "/b/x"}), "allow:2");  // public includes users without groups
  EXPECT_EQ(Decide(*e, {"", {}, "/b/x"}), "allow:2");        // and anonymous requests
  EXPECT_EQ(Decide(*e, {"", {}, "/a/x"}), "none");
}

TEST(PolicyEngineTest, RolesIncludingNestedRolesAndGroupsInRoles) {
  // auditors lists the role readers: every member of readers is an auditor too.
  Json roles = {{"rangerRoles",
                 {{{"name", "readers"}, {"users", {{{"name", "carol"}}}}},
                  {{"name", "auditors"}, {"groups", {{{"name", "audit"}}}}, {"roles", {{{"name", "readers"}}}}}}}};
  auto e = Engine({{.id = 1, .values = {"/r"}, .allow = {Item({"read"}, {}, {}, {"readers"})}}}, roles);
  EXPECT_EQ(Decide(*e, {"carol", {}, "/r/x"}), "allow:1");
  EXPECT_EQ(Decide(*e, {"dan", {"audit"}, "/r/x"}), "none");  // auditors is not in readers...
  auto e2 = Engine({{.id = 1, .values = {"/r"}, .allow = {Item({"read"}, {}, {}, {"auditors"})}}}, roles);
  EXPECT_EQ(Decide(*e2, {"dan", {"audit"}, "/r/x"}), "allow:1");
  EXPECT_EQ(Decide(*e2, {"carol", {}, "/r/x"}), "allow:1");  // ...readers is a member of auditors
}

TEST(PolicyEngineTest, DenyWinsOverAllowAtTheSamePriorityWhateverTheOrder) {
  auto allow = P{.id = 1, .values = {"/data"}, .allow = {Item({"read"}, {}, {"ml"})}};
  auto deny = P{.id = 2, .values = {"/data/x"}, .deny = {Item({"read"}, {"eve"})}};
  for (bool allow_first : {true, false}) {
    auto e = allow_first ? Engine({allow, deny}) : Engine({deny, allow});
    EXPECT_EQ(Decide(*e, {"eve", {"ml"}, "/data/x"}), "deny:2");
    EXPECT_EQ(Decide(*e, {"eve", {"ml"}, "/data/y"}), "allow:1");
    EXPECT_EQ(Decide(*e, {"bob", {"ml"}, "/data/x"}), "allow:1");
  }
}

TEST(PolicyEngineTest, DenyInTheSamePolicyBeatsItsAllow) {
  auto e = Engine(
      {{.id = 1, .values = {"/data"}, .allow = {Item({"read"}, {}, {"ml"})}, .deny = {Item({"read"}, {"eve"})}}});
  EXPECT_EQ(Decide(*e, {"eve", {"ml"}, "/data/x"}), "deny:1");
}

TEST(PolicyEngineTest, OverrideAllowBeatsNormalDeny_RangerNotIntuition) {
  auto e = Engine({{.id = 1, .values = {"/data"}, .allow = {Item({"write"}, {"alice"})}, .priority = 1},
                   {.id = 2, .values = {"/data/x"}, .deny = {Item({"write"}, {"alice"})}}});
  EXPECT_EQ(Decide(*e, {"alice", {}, "/data/x", AccessType::kWrite}), "allow:1");
}

TEST(PolicyEngineTest, OverrideDenyBeatsNormalAllow) {
  auto e = Engine({{.id = 1, .values = {"/data"}, .allow = {Item({"read"}, {"alice"})}},
                   {.id = 2, .values = {"/data/x"}, .deny = {Item({"read"}, {"alice"})}, .priority = 1}});
  EXPECT_EQ(Decide(*e, {"alice", {}, "/data/x"}), "deny:2");
  EXPECT_EQ(Decide(*e, {"alice", {}, "/data/y"}), "allow:1");
}

TEST(PolicyEngineTest, AnUndecidedOverrideLevelFallsThroughToNormal) {
  auto e = Engine({{.id = 1, .values = {"/data"}, .allow = {Item({"read"}, {"bob"})}, .priority = 1},
                   {.id = 2, .values = {"/data"}, .deny = {Item({"read"}, {"alice"})}}});
  EXPECT_EQ(Decide(*e, {"alice", {}, "/data/x"}), "deny:2");
}

TEST(PolicyEngineTest, DenyExceptionCancelsTheDenyOnlyForItsAccess) {
  // allow {eng: read}, allow-exception {eve: read}, deny {contractors: read, write}, deny-exception {carl: read}.
  auto e = Engine({{.id = 1,
                    .values = {"/d"},
                    .allow = {Item({"read", "write"}, {}, {"eng"})},
                    .deny = {Item({"read", "write"}, {}, {"contractors"})},
                    .allow_ex = {Item({"read"}, {"eve"})},
                    .deny_ex = {Item({"read"}, {"carl"})}}});
  EXPECT_EQ(Decide(*e, {"carl", {"contractors", "eng"}, "/d/x"}), "allow:1");
  EXPECT_EQ(Decide(*e, {"carl", {"contractors", "eng"}, "/d/x", AccessType::kWrite}), "deny:1");
  EXPECT_EQ(Decide(*e, {"dora", {"contractors", "eng"}, "/d/x"}), "deny:1");
}

TEST(PolicyEngineTest, AllowExceptionNeverDenies_RangerNotIntuition) {
  auto e = Engine(
      {{.id = 1, .values = {"/d"}, .allow = {Item({"read"}, {}, {"eng"})}, .allow_ex = {Item({"read"}, {"eve"})}},
       {.id = 2, .values = {"/d/shared"}, .allow = {Item({"read"}, {"eve"})}}});
  // The exception only removes policy 1's allow: no decision from it, so policy 2 still allows.
  EXPECT_EQ(Decide(*e, {"eve", {"eng"}, "/d/x"}), "none");
  EXPECT_EQ(Decide(*e, {"eve", {"eng"}, "/d/shared"}), "allow:2");
  // ... and the exception is per access type.
  EXPECT_EQ(Decide(*e, {"bob", {"eng"}, "/d/x"}), "allow:1");
}

TEST(PolicyEngineTest, DenyExceptionGrantsNothingByItself) {
  auto e = Engine(
      {{.id = 1, .values = {"/d"}, .deny = {Item({"read"}, {}, {"public"})}, .deny_ex = {Item({"read"}, {"ops"})}}});
  EXPECT_EQ(Decide(*e, {"ops", {}, "/d/x"}), "none");
  EXPECT_EQ(Decide(*e, {"bob", {}, "/d/x"}), "deny:1");
}

TEST(PolicyEngineTest, DenyAllElseDeniesWhatItsItemsDoNotAllowEvenIfAnotherPolicyAllows_RangerNotIntuition) {
  auto strict = P{.id = 1, .values = {"/data"}, .allow = {Item({"read"}, {"alice"})}, .deny_all_else = true};
  auto open = P{.id = 2, .values = {"/data"}, .allow = {Item({"read"}, {}, {"public"})}};
  auto e = Engine({strict, open});
  EXPECT_EQ(Decide(*e, {"alice", {}, "/data/x"}), "allow:1");
  EXPECT_EQ(Decide(*e, {"bob", {}, "/data/x"}), "deny:1");
  // The same open policy as an override wins.
  open.priority = 1;
  auto e2 = Engine({strict, open});
  EXPECT_EQ(Decide(*e2, {"bob", {}, "/data/x"}), "allow:2");
}

TEST(PolicyEngineTest, AllowExceptionWithDenyAllElseDenies_RangerNotIntuition) {
  auto e = Engine({{.id = 1,
                    .values = {"/data"},
                    .allow = {Item({"read"}, {}, {"eng"})},
                    .allow_ex = {Item({"read"}, {"eve"})},
                    .deny_all_else = true},
                   {.id = 2, .values = {"/data"}, .allow = {Item({"read"}, {"eve"})}}});
  EXPECT_EQ(Decide(*e, {"eve", {"eng"}, "/data/x"}), "deny:1");
}

TEST(PolicyEngineTest, AccessMarkedNotAllowedIsIgnoredNotDenied_RangerNotIntuition) {
  Json deny_write_off = {{"accesses", {{{"type", "write"}, {"isAllowed", false}}}}, {"users", {"eve"}}};
  auto e = Engine({{.id = 1, .values = {"/d"}, .allow = {Item({"write"}, {"eve"})}, .deny = {deny_write_off}}});
  EXPECT_EQ(Decide(*e, {"eve", {}, "/d/x", AccessType::kWrite}), "allow:1");
}

TEST(PolicyEngineTest, DisabledPoliciesTakeNoPart) {
  auto e = Engine({{.id = 1, .values = {"/d"}, .deny = {Item({"read"}, {"eve"})}, .enabled = false},
                   {.id = 2, .values = {"/d"}, .allow = {Item({"read"}, {"eve"})}}});
  EXPECT_EQ(Decide(*e, {"eve", {}, "/d/x"}), "allow:2");
}

TEST(PolicyEngineTest, PolicyOnAChildSaysNothingAboutItsParent_RangerNotIntuition) {
  auto e = Engine({{.id = 1, .values = {"/data/a"}, .allow = {Item({"read", "execute"}, {"u"})}}});
  EXPECT_EQ(Decide(*e, {"u", {}, "/data", AccessType::kExecute}), "none");
}

TEST(PolicyEngineTest, SuperUsersAndGroupsOfTheServiceAreAlwaysAllowed) {
  Json cfg = {{"serviceConfig", {{"ranger.plugin.super.users", "hdfs, admin"}, {"ranger.plugin.super.groups", "ops"}}}};
  auto e = Engine({{.id = 1, .values = {"/"}, .deny = {Item({"read"}, {}, {"public"})}}}, cfg);
  EXPECT_EQ(Decide(*e, {"admin", {}, "/x"}), "allow:super");
  EXPECT_EQ(Decide(*e, {"z", {"ops"}, "/x"}), "allow:super");
  EXPECT_EQ(Decide(*e, {"z", {}, "/x"}), "deny:1");
}

TEST(PolicyEngineTest, ConditionsMayOnlyDeny) {
  Json doc = {{"serviceName", "s"},
              {"policyVersion", 1},
              {"policies",
               {{{"id", 1},
                 {"name", "conditional allow"},
                 {"resources", {{"path", {{"values", {"/d"}}, {"isRecursive", true}}}}},
                 {"policyItems",
                  {{{"accesses", {{{"type", "read"}, {"isAllowed", true}}}},
                    {"users", {"u"}},
                    {"conditions", {{{"type", "ip-range"}, {"values", {"10.0.0.0/8"}}}}}}}},
                 {"denyPolicyItems",
                  {{{"accesses", {{{"type", "read"}, {"isAllowed", true}}}},
                    {"users", {"eve"}},
                    {"conditions", {{{"type", "ip-range"}, {"values", {"10.0.0.0/8"}}}}}}}}}}}};
  auto set = ParseServicePolicies(doc.dump(), "t");
  ASSERT_TRUE(set.has_value()) << set.error().ToString();
  PolicyEngine e(std::move(*set));
  EXPECT_EQ(Decide(e, {"u", {}, "/d/x"}), "none");      // an allow we cannot evaluate never grants
  EXPECT_EQ(Decide(e, {"eve", {}, "/d/x"}), "deny:1");  // a deny we cannot evaluate still denies
}

TEST(PolicyEngineTest, ADownloadThatIsNotWholeNeverParses) {
  std::string good = Json({{"serviceName", "s"}, {"policyVersion", 3}, {"policies", Json::array()}}).dump();
  EXPECT_TRUE(ParseServicePolicies(good, "t").has_value());
  auto truncated = ParseServicePolicies(good.substr(0, good.size() - 3), "dl");
  ASSERT_FALSE(truncated.has_value());
  EXPECT_NE(truncated.error().message().find("dl: not JSON"), std::string::npos) << truncated.error().ToString();
  EXPECT_FALSE(ParseServicePolicies(R"({"serviceName":"s"})", "t").has_value());  // no policies list
  auto bad_access = ParseServicePolicies(
      R"({"policies":[{"id":1,"resources":{"path":{"values":["/d"]}},"policyItems":[{"accesses":[{"type":"fly"}]}]}]})",
      "t");
  ASSERT_FALSE(bad_access.has_value());
  EXPECT_NE(bad_access.error().message().find("policies[0].policyItems[0].accesses[0].type"), std::string::npos)
      << bad_access.error().ToString();
}

TEST(PolicyEngineTest, ManyPoliciesAreIndexedNotScanned) {
  std::vector<P> ps;
  for (int i = 0; i < 2000; ++i) {
    ps.push_back({.id = i, .values = {"/proj" + std::to_string(i) + "/*.rec"}, .allow = {Item({"read"}, {"u"})}});
  }
  ps.push_back({.id = 5000, .values = {"/proj7"}, .deny = {Item({"read"}, {"eve"})}});
  auto e = Engine(ps);
  EXPECT_EQ(Decide(*e, {"u", {}, "/proj1234/a.rec"}), "allow:1234");
  EXPECT_EQ(Decide(*e, {"u", {}, "/proj1234/a.txt"}), "none");
  EXPECT_EQ(Decide(*e, {"eve", {}, "/proj7/a.rec"}), "deny:5000");
  EXPECT_EQ(Decide(*e, {"u", {}, "/proj7/a.rec"}), "allow:7");
}

}  // namespace
}  // namespace shoal::authz
