// shoal policy check --user U [--groups G] --path P --access read|write|execute
//                    [--policies FILE [--fallback deny|allow]] [--config CFG]
//
// Prints ALLOWED or DENIED and what decided it (a policy's id and name, a
// super user, or the fallback), from a ServicePolicies file or from the
// policies a running cluster enforces. Exit code 0 for ALLOWED, 4 for DENIED.
#include <CLI/CLI.hpp>
#include <cstdio>
#include <memory>
#include <nlohmann/json.hpp>

#include "authz/authorizer.h"
#include "authz/policies.h"
#include "authz/policy_engine.h"
#include "cli/commands.h"

namespace shoal::cli {
namespace {

struct CheckArgs {
  ClientOptions client;
  std::string user;
  std::string groups;
  std::string path;
  std::string access;
  std::string policies;
  std::string fallback = "deny";
  bool json = false;
};

std::vector<std::string> SplitGroups(const std::string& text) {
  std::vector<std::string> out;
  for (size_t at = 0; at <= text.size();) {
    size_t comma = std::min(text.find(',', at), text.size());
    if (comma > at) out.push_back(text.substr(at, comma - at));
    at = comma + 1;
  }
  return out;
}

int Print(const authz::Authorizer::Explanation& e, const std::string& fallback, bool json) {
  if (json) {
    std::printf("%s\n", authz::ExplanationJson(e).c_str());
  } else {
    std::printf("%s\n", authz::ExplanationText(e, fallback).c_str());
  }
  return e.allowed ? 0 : 4;
}

int RunCheck(const CheckArgs& a) {
  auto access = authz::ParseAccessType(a.access);
  if (!access) return Fail(access.error());
  const auto groups = SplitGroups(a.groups);
  if (!a.policies.empty()) {
    if (a.fallback != "deny" && a.fallback != "allow") {
      return Fail(Status(Code::kInvalidArgument, "--fallback: expected deny or allow, not '" + a.fallback + "'"));
    }
    auto set = authz::LoadServicePolicies(a.policies);
    if (!set) return Fail(set.error());
    for (const auto& note : set->notes) std::fprintf(stderr, "shoal: note: %s\n", note.c_str());
    authz::PolicyEngine engine(std::move(*set));
    return Print(authz::Explain(engine, a.user, groups, a.path, *access, a.fallback == "allow"), a.fallback, a.json);
  }
  auto c = OpenClient(a.client);
  if (!c) return Fail(c.error());
  auto answer = (*c)->PolicyCheck(a.user, groups, a.path, a.access);
  if (!answer) return Fail(answer.error());
  authz::Authorizer::Explanation e;
  std::string fallback = "the workers' authz.fallback";
  try {
    auto j = nlohmann::json::parse(*answer);
    e.allowed = j.at("result").get<std::string>() == "ALLOWED";
    e.outcome = !j.value("determined", false) ? authz::Decision::Outcome::kNotDetermined
                : e.allowed                   ? authz::Decision::Outcome::kAllowed
                                              : authz::Decision::Outcome::kDenied;
    e.policy_id = j.value("policy_id", int64_t{-1});
    e.policy_name = j.value("policy_name", std::string());
    e.super_user = j.value("super_user", false);
    e.version = j.value("version", int64_t{-1});
  } catch (const std::exception& ex) {
    return Fail(Status(Code::kIo, std::string("a worker answered the policy check with malformed JSON: ") + ex.what()));
  }
  return Print(e, fallback, a.json);
}

}  // namespace

void AddPolicyCommands(CLI::App& app, int* exit_code) {
  auto* policy = app.add_subcommand("policy", "Authorization policies (Ranger): check a decision");
  policy->require_subcommand(1);
  auto a = std::make_shared<CheckArgs>();
  auto* check = policy->add_subcommand(
      "check", "Print ALLOWED or DENIED for a user's access to a path, and the policy that decided it");
  AddClientOptions(check, &a->client);
  check->add_option("--user", a->user, "The user asking")->required();
  check->add_option("--groups", a->groups, "The user's groups, comma-separated");
  check->add_option("--path", a->path, "A namespace path: /data/train/x")->required();
  check->add_option("--access", a->access, "read, write or execute")->required();
  check->add_option("--policies", a->policies,
                    "A Ranger ServicePolicies JSON file (default: ask a running cluster, which needs the cluster "
                    "secret or an admin group)");
  check->add_option("--fallback", a->fallback, "With --policies: what no matching policy means (deny or allow)")
      ->capture_default_str();
  check->add_flag("--json", a->json, "One JSON object: result, determined, policy_id, policy_name, version");
  check->callback([a, exit_code] { *exit_code = RunCheck(*a); });
}

}  // namespace shoal::cli
