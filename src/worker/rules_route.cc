#include "worker/rules_route.h"

#include <xxhash.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include <spdlog/spdlog.h>

#include "cache/page_store.h"
#include "meta/mount_table.h"
#include "worker/worker_service.h"

namespace shoal {
namespace {

using Json = nlohmann::json;

constexpr std::string_view kStateName = "rules.state";
constexpr size_t kMaxRules = 10'000;  // CLI rules a worker keeps
constexpr size_t kMaxStateBytes = 16 << 20;

// The fields the cache enforces; write_mode and replicas are the client's.
bool CacheField(std::string_view f) {
  return f == "pin" || f == "priority" || f == "ttl" || f == "quota" || f == "cluster_quota" || f == "admission";
}

std::string Hex64(uint64_t v) {
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(v));
  return buf;
}

Json RuleJson(const PathRule& r) { return Json{{"path", r.path}, {"fields", FormatRuleFields(r)}}; }

Result<PathRule> RuleFromJson(const Json& j) {
  if (!j.is_object() || !j.contains("path") || !j["path"].is_string() || !j.contains("fields") ||
      !j["fields"].is_array()) {
    return Err(Code::kCorruption, "a rule is not {\"path\", \"fields\"}");
  }
  PathRule r = EmptyRule(j["path"].get<std::string>());
  for (const auto& f : j["fields"]) {
    if (!f.is_string()) return Err(Code::kCorruption, "a rule field is not a string");
    std::string text = f.get<std::string>();
    auto eq = text.find('=');
    if (eq == std::string::npos) return Err(Code::kCorruption, "rule field '" + text + "' has no '='");
    SHOAL_RETURN_IF_ERROR(SetRuleField(&r, text.substr(0, eq), text.substr(eq + 1)));
  }
  return r;
}

// `over`'s set fields replace `base`'s.
PathRule Overlay(PathRule base, const PathRule& over) {
  for (const auto& text : FormatRuleFields(over)) {
    auto eq = text.find('=');
    (void)SetRuleField(&base, text.substr(0, eq), text.substr(eq + 1));  // read back from FormatRuleFields
  }
  return base;
}

bool NoField(const PathRule& r) { return FormatRuleFields(r).empty(); }

Status Bad(const std::string& what) { return Status(Code::kInvalidArgument, what); }

}  // namespace

Result<std::unique_ptr<RuleBook>> RuleBook::Open(const std::string& dir, std::vector<PathRule> config_rules) {
  std::unique_ptr<RuleBook> b(new RuleBook());
  b->file_ = dir + "/" + std::string(kStateName);
  b->config_ = std::move(config_rules);
  std::ifstream in(b->file_, std::ios::binary);
  if (!in) {
    auto merged = b->MergeLocked({});
    if (!merged) return Err(merged.error());
    return b;
  }
  std::stringstream ss;
  ss << in.rdbuf();
  std::string text = ss.str();
  auto corrupt = [&](const std::string& why) {
    return Err(Code::kCorruption, "the path rules set from the CLI in " + b->file_ + " cannot be read (" + why +
                                      "): fix or delete the file (then set the rules again with shoal rules set)");
  };
  if (text.size() > kMaxStateBytes) return corrupt("larger than 16 MiB");
  auto nl = text.find('\n');
  if (nl == std::string::npos) return corrupt("no checksum line");
  std::string body = text.substr(0, nl), sum = text.substr(nl + 1);
  while (!sum.empty() && (sum.back() == '\n' || sum.back() == '\r')) sum.pop_back();
  if (sum != Hex64(XXH3_64bits(body.data(), body.size()))) return corrupt("checksum mismatch");
  Json j = Json::parse(body, nullptr, false);
  if (j.is_discarded() || !j.is_object() || !j.contains("rules") || !j["rules"].is_array() || !j.contains("version") ||
      !j["version"].is_number_unsigned()) {
    return corrupt("not a rules file");
  }
  b->version_ = j["version"].get<uint64_t>();
  for (const auto& rj : j["rules"]) {
    auto r = RuleFromJson(rj);
    if (!r) return corrupt(r.error().message());
    b->cli_.push_back(std::move(*r));
  }
  auto merged = b->MergeLocked(b->cli_);
  if (!merged) return corrupt(merged.error().message());
  spdlog::info("path rules: {} from the config, {} set from the CLI (version {}, {})", b->config_.size(),
               b->cli_.size(), b->version_, b->file_);
  return b;
}

Result<PathRules> RuleBook::MergeLocked(const std::vector<PathRule>& cli) const {
  std::map<std::string, PathRule> by_path;
  for (const auto& r : config_) by_path[r.path] = r;
  for (const auto& r : cli) {
    auto it = by_path.find(r.path);
    by_path[r.path] = it == by_path.end() ? r : Overlay(it->second, r);
  }
  std::vector<PathRule> all;
  for (auto& [p, r] : by_path) all.push_back(std::move(r));
  return PathRules::Make(std::move(all));
}

PathRules RuleBook::Effective() const {
  std::lock_guard lock(mu_);
  auto r = MergeLocked(cli_);
  return r ? *r : PathRules();  // checked when each change was made
}

uint64_t RuleBook::version() const {
  std::lock_guard lock(mu_);
  return version_;
}

Status RuleBook::SaveLocked() const {
  Json rules = Json::array();
  for (const auto& r : cli_) rules.push_back(RuleJson(r));
  std::string body = Json{{"version", version_}, {"rules", rules}}.dump(-1, ' ', false, Json::error_handler_t::replace);
  std::string text = body + "\n" + Hex64(XXH3_64bits(body.data(), body.size())) + "\n";
  std::string tmp = file_ + ".tmp";
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    out << text;
    out.flush();
    if (!out)
      return Status(Code::kIo, "cannot write the path rules to " + tmp + "; is the cache dir writable and not full?");
  }
  if (std::rename(tmp.c_str(), file_.c_str()) != 0) {
    std::remove(tmp.c_str());
    return Status(Code::kIo, "cannot rename the path rules into " + file_);
  }
  return {};
}

Result<PathRules> RuleBook::Set(const std::string& path, const std::map<std::string, std::string>& fields) {
  if (fields.empty()) return Err(Bad("no rule field given for " + path + "; e.g. pin=true, ttl=1h, quota=10GiB"));
  std::lock_guard lock(mu_);
  auto cli = cli_;
  auto it = std::find_if(cli.begin(), cli.end(), [&](const PathRule& r) { return r.path == path; });
  PathRule rule = it == cli.end() ? EmptyRule(path) : *it;
  for (const auto& [f, v] : fields) {
    if (!CacheField(f)) {
      bool known = std::find(RuleFieldNames().begin(), RuleFieldNames().end(), f) != RuleFieldNames().end();
      return Err(Bad(known ? "rule field '" + f + "' is a client setting: set it in the config's rules: list"
                           : "unknown rule field '" + f.substr(0, 64) +
                                 "'; the CLI sets pin, priority, ttl, quota, cluster_quota and admission"));
    }
    SHOAL_RETURN_IF_ERROR(SetRuleField(&rule, f, v));
  }
  if (it != cli.end()) {
    if (NoField(rule)) cli.erase(it);
    else *it = rule;
  } else if (!NoField(rule)) {
    if (cli.size() >= kMaxRules) return Err(Bad("too many CLI rules (" + std::to_string(kMaxRules) + "): remove some"));
    cli.push_back(rule);
  }
  std::sort(cli.begin(), cli.end(), [](const PathRule& a, const PathRule& b) { return a.path < b.path; });
  auto merged = MergeLocked(cli);
  if (!merged) return Err(merged.error());
  auto old = std::move(cli_);
  cli_ = std::move(cli);
  ++version_;
  if (Status st = SaveLocked(); !st.ok()) {
    cli_ = std::move(old);
    --version_;
    return Err(st);
  }
  return merged;
}

Result<PathRules> RuleBook::Remove(const std::string& path) {
  std::lock_guard lock(mu_);
  auto it = std::find_if(cli_.begin(), cli_.end(), [&](const PathRule& r) { return r.path == path; });
  if (it == cli_.end()) {
    bool in_config = std::any_of(config_.begin(), config_.end(), [&](const PathRule& r) { return r.path == path; });
    return Err(Code::kNotFound, in_config ? "the rule for " + path + " comes from the config file: edit it there"
                                          : "no CLI rule for " + path + "; shoal rules lists them");
  }
  auto old = cli_;
  cli_.erase(it);
  ++version_;
  if (Status st = SaveLocked(); !st.ok()) {
    cli_ = std::move(old);
    --version_;
    return Err(st);
  }
  return MergeLocked(cli_);
}

std::string RuleBook::ListJson(const PageStore& pages) const {
  std::lock_guard lock(mu_);
  std::map<std::string, std::pair<std::string, PathRule>> by_path;  // path -> (source, effective rule)
  for (const auto& r : config_) by_path[r.path] = {"config", r};
  for (const auto& r : cli_) {
    auto it = by_path.find(r.path);
    if (it == by_path.end()) by_path[r.path] = {"cli", r};
    else it->second = {"config+cli", Overlay(it->second.second, r)};
  }
  Json rules = Json::array();
  for (const auto& [path, sr] : by_path) {
    Json j = RuleJson(sr.second);
    j["source"] = sr.first;
    j["bytes"] = pages.BytesUnder(path);
    rules.push_back(std::move(j));
  }
  return Json{{"version", version_}, {"rules", rules}}.dump(-1, ' ', false, Json::error_handler_t::replace);
}

double ClusterShare(const Config& config) {
  size_t n = config.cluster.workers.size();
  return n > 1 ? 1.0 / static_cast<double>(n) : 1.0;
}

Result<std::string> HandleRulesRoute(WorkerService& svc, RuleBook& book, const std::string& method,
                                     const std::string& route, const std::map<std::string, std::string>& query,
                                     double cluster_share) {
  if (method == "GET" || method == "HEAD") {
    if (!query.empty()) return Err(Bad("GET /v1/rules takes no query parameters; see docs/protocol.md"));
    return book.ListJson(svc.pages());
  }
  auto p = query.find("path");
  if (p == query.end() || p->second.empty()) return Err(Bad("missing query parameter 'path'"));
  if (p->second.size() > 4096) return Err(Bad("path is longer than 4096 bytes"));
  auto ns = MountTable::NormalisePath(p->second);
  if (!ns) return Err(ns.error());
  // One change at a time, so that the store gets the rule tables in the order they were made.
  static std::mutex change_mu;
  std::lock_guard lock(change_mu);
  Result<PathRules> rules = Err(Code::kInternal, "unset");
  if (route == "/v1/rules/rm") {
    if (query.size() != 1) return Err(Bad("POST /v1/rules/rm takes only 'path'"));
    rules = book.Remove(*ns);
  } else {
    std::map<std::string, std::string> fields(query);
    fields.erase("path");
    rules = book.Set(*ns, fields);
  }
  if (!rules) return Err(rules.error());
  svc.pages().SetRules(std::move(*rules), cluster_share);
  return Json{{"path", *ns}, {"version", book.version()}}.dump(-1, ' ', false, Json::error_handler_t::replace);
}

}  // namespace shoal
