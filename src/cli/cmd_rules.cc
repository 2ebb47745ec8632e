// shoal pin / unpin / rules [set|rm]: path rules set at run time on every
// worker (docs/protocol.md, "Path rules"; README "Path rules").
//
// A change goes to every worker of the ring; each keeps it in its first cache
// dir. A worker that does not take it (down, or refusing) is named and the
// command exits non-zero: run it again once the worker answers. `shoal rules`
// shows each worker's rules version, so a worker that missed a change shows.
#include <algorithm>
#include <cstdio>
#include <map>
#include <nlohmann/json.hpp>

#include "cli/commands.h"
#include "client/client_internal.h"
#include "common/units.h"
#include "ufs/uri.h"

namespace shoal::cli {
namespace {

using Json = nlohmann::json;

std::string Enc(const std::string& s) { return PercentEncode(s, true); }

// The namespace path a rule names: a physical URI maps through the mounts;
// anything else is taken as written (rules may sit above the mounts).
std::string RulePath(Client& c, const std::string& path) {
  if (path.find("://") == std::string::npos) return path;
  auto st = c.Stat(path);
  return st ? st->path : path;
}

// Sends one change to every worker. Prints the outcome; returns the exit code.
int Change(Client& c, const std::string& target, const std::string& what) {
  std::string failed, refused;
  size_t ok = 0;
  auto answers = CallWorkers(c, "POST", [&](const std::string&) { return target; });
  for (const auto& r : answers) {
    if (r.status.ok()) {
      ++ok;
    } else if (r.status.code() == Code::kInvalidArgument || r.status.code() == Code::kNotFound) {
      refused = r.status.message();  // the same input on every worker: one message is enough
    } else {
      failed += (failed.empty() ? "" : "; ") + ("worker " + r.member + ": " + r.status.message());
    }
  }
  if (!refused.empty() && ok == 0) return Fail(Status(Code::kInvalidArgument, refused));
  if (!failed.empty() || !refused.empty()) {
    return Fail(Status(Code::kUnavailable, what + " reached " + std::to_string(ok) + " of " +
                                               std::to_string(answers.size()) + " workers; not: " + failed + refused +
                                               "; run the command again once they answer (shoal rules shows each "
                                               "worker's rules version)"));
  }
  std::printf("%s on %zu workers\n", what.c_str(), ok);
  return 0;
}

int Set(Client& c, const std::string& path, const std::vector<std::string>& fields) {
  if (fields.empty()) {
    return Fail(Status(Code::kInvalidArgument,
                       "no rule field given; e.g. shoal rules set " + path + " pin=true ttl=1h quota=10GiB"));
  }
  std::string ns = RulePath(c, path);
  std::string target = "/v1/rules?path=" + Enc(ns);
  std::map<std::string, std::string> seen;
  for (const auto& f : fields) {
    auto eq = f.find('=');
    if (eq == std::string::npos || eq == 0) {
      return Fail(Status(Code::kInvalidArgument, "'" + f + "' is not field=value (e.g. pin=true, priority=low)"));
    }
    std::string name = f.substr(0, eq);
    if (name == "path" || !seen.emplace(name, f.substr(eq + 1)).second) {
      return Fail(Status(Code::kInvalidArgument, "rule field '" + name + "' given twice or not a field"));
    }
    // Checked here too, so that bad input is one clear line before any worker is asked.
    PathRule probe = EmptyRule(ns);
    if (Status st = SetRuleField(&probe, name, f.substr(eq + 1)); !st.ok()) return Fail(st);
    target += "&" + Enc(name) + "=" + Enc(f.substr(eq + 1));
  }
  std::string joined;
  for (const auto& f : fields) joined += " " + f;
  return Change(c, target, "rule " + ns + ":" + joined);
}

int Remove(Client& c, const std::string& path) {
  std::string ns = RulePath(c, path);
  return Change(c, "/v1/rules/rm?path=" + Enc(ns), "removed the CLI rule for " + ns);
}

int List(Client& c, bool json) {
  struct Row {
    std::string source;
    std::vector<std::string> fields;
    std::map<std::string, uint64_t> bytes;  // worker -> bytes
  };
  std::map<std::string, Row> rows;
  std::map<std::string, uint64_t> versions;
  std::string failed;
  std::vector<std::string> members;
  for (const auto& r : CallWorkers(c, "GET", [](const std::string&) { return "/v1/rules"; })) {
    if (!r.status.ok()) {
      failed += (failed.empty() ? "" : "; ") + ("worker " + r.member + ": " + r.status.message());
      continue;
    }
    try {
      auto j = Json::parse(r.body);
      members.push_back(r.member);
      versions[r.member] = j.at("version").get<uint64_t>();
      for (const auto& rj : j.at("rules")) {
        auto& row = rows[rj.at("path").get<std::string>()];
        row.source = rj.at("source").get<std::string>();
        row.fields = rj.at("fields").get<std::vector<std::string>>();
        row.bytes[r.member] = rj.at("bytes").get<uint64_t>();
      }
    } catch (const std::exception& e) {
      failed += (failed.empty() ? "" : "; ") + ("worker " + r.member + ": malformed answer: " + e.what());
    }
  }
  if (json) {
    for (const auto& [path, row] : rows) {
      uint64_t total = 0;
      for (auto& [w, b] : row.bytes) total += b;
      std::printf("%s\n", Json{{"path", path},
                               {"source", row.source},
                               {"fields", row.fields},
                               {"bytes", row.bytes},
                               {"total_bytes", total}}
                              .dump()
                              .c_str());
    }
  } else {
    std::printf("%-30s %-11s %-40s %s\n", "PATH", "SOURCE", "FIELDS", "BYTES (TOTAL; PER WORKER)");
    for (const auto& [path, row] : rows) {
      std::string fields, per;
      uint64_t total = 0;
      for (const auto& f : row.fields) fields += (fields.empty() ? "" : " ") + f;
      for (const auto& [w, b] : row.bytes) {
        total += b;
        per += (per.empty() ? "" : ", ") + w + " " + FormatSize(b);
      }
      std::printf("%-30s %-11s %-40s %s; %s\n", path.c_str(), row.source.c_str(), fields.c_str(),
                  FormatSize(total).c_str(), per.c_str());
    }
    if (rows.empty()) std::printf("(no rules)\n");
  }
  std::vector<uint64_t> distinct;
  for (auto& [w, v] : versions) distinct.push_back(v);
  std::sort(distinct.begin(), distinct.end());
  distinct.erase(std::unique(distinct.begin(), distinct.end()), distinct.end());
  if (distinct.size() > 1) {
    std::string which;
    for (auto& [w, v] : versions) which += (which.empty() ? "" : ", ") + w + " v" + std::to_string(v);
    std::fprintf(stderr,
                 "shoal: warning: the workers hold different versions of the CLI rules (%s): one missed a change; "
                 "set it again\n",
                 which.c_str());
  }
  if (!failed.empty()) {
    return Fail(Status(Code::kUnavailable, "could not list the rules of every worker: " + failed));
  }
  return distinct.size() > 1 ? 1 : 0;
}

}  // namespace

void AddRulesCommands(CLI::App& app, int* exit_code) {
  struct Args {
    ClientOptions client;
    std::string path;
    std::vector<std::string> fields;
    bool json = false;
  };
  {
    auto a = std::make_shared<Args>();
    auto* cmd = app.add_subcommand("pin", "Pin a path on every worker: its cached pages are never evicted");
    AddClientOptions(cmd, &a->client);
    cmd->add_option("path", a->path, "Namespace path (a prefix) or physical URI")->required();
    cmd->callback([a, exit_code] {
      auto c = OpenClient(a->client);
      if (!c) return void(*exit_code = Fail(c.error()));
      *exit_code = Set(**c, a->path, {"pin=true"});
    });
  }
  {
    auto a = std::make_shared<Args>();
    auto* cmd = app.add_subcommand("unpin", "Unpin a path on every worker: its pages are evictable again");
    AddClientOptions(cmd, &a->client);
    cmd->add_option("path", a->path, "Namespace path (a prefix) or physical URI")->required();
    cmd->callback([a, exit_code] {
      auto c = OpenClient(a->client);
      if (!c) return void(*exit_code = Fail(c.error()));
      *exit_code = Set(**c, a->path, {"pin=false"});
    });
  }
  auto list = std::make_shared<Args>();
  auto* rules = app.add_subcommand(
      "rules", "List the path rules (config and CLI) with the bytes each holds; `rules set` / `rules rm` change them");
  AddClientOptions(rules, &list->client);
  rules->add_flag("--json", list->json, "One JSON object per rule");
  {
    auto a = std::make_shared<Args>();
    auto* cmd = rules->add_subcommand("set", "Set fields of the CLI rule for a path on every worker");
    AddClientOptions(cmd, &a->client);
    cmd->add_option("path", a->path, "Namespace path (a prefix) or physical URI")->required();
    cmd->add_option("fields", a->fields,
                    "field=value ...: pin=true|false, priority=high|medium|low, ttl=1h, quota=10GiB, "
                    "cluster_quota=1TiB, admission=skip|cache (an empty value unsets the field)")
        ->required();
    cmd->callback([a, exit_code] {
      auto c = OpenClient(a->client);
      if (!c) return void(*exit_code = Fail(c.error()));
      *exit_code = Set(**c, a->path, a->fields);
    });
  }
  {
    auto a = std::make_shared<Args>();
    auto* cmd = rules->add_subcommand("rm", "Remove the CLI rule for a path on every worker");
    AddClientOptions(cmd, &a->client);
    cmd->add_option("path", a->path, "Namespace path or physical URI")->required();
    cmd->callback([a, exit_code] {
      auto c = OpenClient(a->client);
      if (!c) return void(*exit_code = Fail(c.error()));
      *exit_code = Remove(**c, a->path);
    });
  }
  rules->callback([rules, list, exit_code] {
    if (!rules->get_subcommands().empty()) return;  // set / rm ran
    auto c = OpenClient(list->client);
    if (!c) return void(*exit_code = Fail(c.error()));
    *exit_code = List(**c, list->json);
  });
}

}  // namespace shoal::cli
