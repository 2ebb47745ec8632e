// shoal token issue --user U [--groups a,b] [--ttl 24h] [--config CFG]
// shoal token keygen --out PATH
//
// `issue` signs a bearer token (security/token.h) with the cluster key named
// by security.token_key_file in the config, and prints it as its last line
// (a line before it says whose it is and when it expires). Clients send it
// from SHOAL_TOKEN, client.token_file or shoal.Client(token=...).
// `keygen` writes a new cluster key (mode 0600), e.g. for a rotation.
#include <cstdio>
#include <cstdlib>

#include "cli/commands.h"
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
  if (a.user.empty() || a.user.size() > 256 || a.user.find_first_of(";,\r\n") != std::string::npos) {
    return Fail(Status(Code::kInvalidArgument, "--user must be 1-256 characters without ; , or line breaks"));
  }
  std::vector<std::string> groups;
  for (size_t b = 0, e; b < a.groups.size(); b = e + 1) {
    e = std::min(a.groups.find(',', b), a.groups.size());
    if (e > b) groups.push_back(a.groups.substr(b, e - b));
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
