// shoal token issue --user U [--groups a,b] [--ttl 24h] [--config CFG]
// shoal token keygen --out PATH
//
// `issue` signs a bearer token (security/token.h) with the cluster key named
// by security.token_key_file in the config, and prints it as its last line
// (a line before it says whose it is and when it expires). Clients send it
// from SHOAL_TOKEN, client.token_file or shoal.Client(token=...).
// `keygen` writes a new cluster key (mode 0600), e.g. for a rotation.
//
// shoal whoami [--config CFG] [--json]
// prints the identity a worker finds in this client's requests.
#include <cstdio>
#include <cstdlib>

#include <nlohmann/json.hpp>
#include "cli/commands.h"

#include "common/end_user.h"
#include "common/units.h"
#include "security/token.h"

namespace shoal::cli {
namespace {

struct IssueArgs {
  ClientOptions client;
  std::string user;
  std::string groups;
  std::string ttl = "24h";
};

int RunIssue(const IssueArgs& a) {
  std::string path = a.client.config;
  if (path.empty()) {
    const char* env = std::getenv("SHOAL_CONFIG");
    if (env == nullptr || *env == '\0') {
      return Fail(Status(Code::kInvalidArgument, "no config: give --config FILE or set SHOAL_CONFIG"));
    }
    path = env;
  }
  auto cfg = LoadConfig(path);
  if (!cfg) return Fail(cfg.error());
  if (cfg->security.token_key_file.empty()) {
    return Fail(
        Status(Code::kInvalidArgument, path + " names no cluster key (security.token_key_file): make one with "
                                              "`shoal token keygen --out FILE` and set it in the workers' config"));
  }
  auto ttl = ParseDuration(a.ttl);
  if (!ttl) return Fail(ttl.error().WithContext("--ttl"));
  if (ttl->count() < 1000) return Fail(Status(Code::kInvalidArgument, "--ttl must be at least 1s"));
  constexpr const char* kNames = "1-256 letters, digits or ._@-+=$\\";
  if (!IsHeaderSafeName(a.user)) {
    return Fail(Status(Code::kInvalidArgument, "--user " + a.user + ": a user name is " + kNames));
  }
  std::vector<std::string> groups;
  for (size_t b = 0, e; b < a.groups.size(); b = e + 1) {
    e = std::min(a.groups.find(',', b), a.groups.size());
    if (e == b) continue;
    groups.push_back(a.groups.substr(b, e - b));
    if (!IsHeaderSafeName(groups.back())) {
      return Fail(Status(Code::kInvalidArgument, "--groups: " + groups.back() + ": a group name is " + kNames));
    }
  }
  auto keys = security::TokenKeys::Load(cfg->security.token_key_file);
  if (!keys) return Fail(keys.error());
  auto seconds = std::chrono::duration_cast<std::chrono::seconds>(*ttl);
  std::string token = keys->Issue(a.user, groups, seconds, security::UnixNow());
  std::fprintf(stderr, "token for %s%s%s, valid for %s (key %s)\n", a.user.c_str(), groups.empty() ? "" : " in ",
               a.groups.c_str(), FormatDuration(*ttl).c_str(), keys->kid().c_str());
  std::printf("%s\n", token.c_str());
  return 0;
}

int RunWhoAmI(const ClientOptions& options, bool json) {
  auto c = OpenClient(options);
  if (!c) return Fail(c.error());
  auto id = (*c)->WhoAmI();
  if (!id) return Fail(id.error());
  if (json) {
    nlohmann::json j{{"user", id->user},
                     {"groups", id->groups},
                     {"proof", id->proof},
                     {"via", id->via},
                     {"may_act_for_others", id->may_act_for_others}};
    std::printf("%s\n", j.dump().c_str());
    return 0;
  }
  if (id->user.empty()) {
    std::printf("anonymous (no credential: set SHOAL_TOKEN, client.token_file or client.tls.cert_file)\n");
    return 0;
  }
  std::string groups;
  for (const auto& g : id->groups) groups += (groups.empty() ? "" : ",") + g;
  std::printf("%s (%s%s%s)%s%s\n", id->user.c_str(), id->proof.c_str(), id->via.empty() ? "" : ", via ",
              id->via.c_str(), groups.empty() ? "" : " groups=", groups.c_str());
  if (id->may_act_for_others) std::printf("may act on behalf of other users (security.proxy_users)\n");
  return 0;
}

}  // namespace

void AddTokenCommands(CLI::App& app, int* exit_code) {
  auto* token = app.add_subcommand("token", "Bearer tokens signed with the cluster key (issue, keygen)");
  token->require_subcommand(1);
  auto a = std::make_shared<IssueArgs>();
  auto* issue = token->add_subcommand("issue", "Print a token for a user, signed with security.token_key_file");
  AddClientOptions(issue, &a->client);
  issue->add_option("--user", a->user, "The user the token names")->required();
  issue->add_option("--groups", a->groups, "The user's groups, comma-separated");
  issue->add_option("--ttl", a->ttl, "How long the token is valid")->capture_default_str();
  issue->callback([a, exit_code] { *exit_code = RunIssue(*a); });

  auto who = std::make_shared<std::pair<ClientOptions, bool>>();
  auto* whoami = app.add_subcommand("whoami", "Print the identity the workers find in this client's requests");
  AddClientOptions(whoami, &who->first);
  whoami->add_flag("--json", who->second, "One JSON object: user, groups, proof, via, may_act_for_others");
  whoami->callback([who, exit_code] { *exit_code = RunWhoAmI(who->first, who->second); });

  auto out = std::make_shared<std::string>();
  auto* keygen = token->add_subcommand("keygen", "Write a new cluster key (64 hex digits, mode 0600)");
  keygen->add_option("--out", *out, "Where to write it (an existing file is kept)")->required();
  keygen->callback([out, exit_code] {
    Status st = security::TokenKeys::CreateKeyFile(*out);
    *exit_code = st.ok() ? 0 : Fail(st);
    if (st.ok()) std::printf("key: %s\n", out->c_str());
  });
}

}  // namespace shoal::cli
