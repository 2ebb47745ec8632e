#include "authz/authorizer.h"

#include <curl/curl.h>
#include <fmt/format.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <random>

#include "common/end_user.h"
#include "common/file_text.h"
#include "common/metrics.h"

namespace shoal::authz {
namespace {

using Json = nlohmann::json;

// The doors a client may declare (common/end_user.h); any other counts as "other".
constexpr size_t kDoorCount = kClientDoorCount;
size_t DoorIndex(std::string_view door) { return ClientDoorIndex(door); }

// shoal_authz_decisions_total{result,door}, looked up once: a decision costs
// an atomic add, not a registry lookup.
Counter& Decisions(bool allowed, std::string_view door) {
  static const auto counters = [] {
    std::array<std::array<Counter*, kDoorCount>, 2> c{};
    for (size_t r = 0; r < 2; ++r) {
      for (size_t d = 0; d < kDoorCount; ++d) {
        c[r][d] = &MetricsRegistry::Global().GetCounter(
            "shoal_authz_decisions_total",
            "Authorization decisions of this worker's policy check, by result (allowed, denied) and door",
            {{"result", r == 1 ? "allowed" : "denied"}, {"door", std::string(kClientDoors[d])}});
      }
    }
    return c;
  }();
  return *counters[allowed ? 1 : 0][DoorIndex(door)];
}

Gauge& VersionGauge() {
  return MetricsRegistry::Global().GetGauge("shoal_authz_policy_version",
                                            "The Ranger policy version this worker enforces (-1: none loaded)");
}

Counter& LoadFailures() {
  return MetricsRegistry::Global().GetCounter(
      "shoal_authz_policy_load_failures_total",
      "Policy downloads or files that could not be used (unreachable, garbled, partial): the last good policies stay");
}

Counter& AuditFailures() {
  return MetricsRegistry::Global().GetCounter("shoal_authz_audit_failures_total",
                                              "Audit lines that could not be written (authz.audit_failure decides)");
}

// The host's name, asked once: audit lines carry it.
const std::string& Hostname() {
  static const std::string name = [] {
    char buf[256] = {};
    return ::gethostname(buf, sizeof buf - 1) == 0 ? std::string(buf) : std::string("localhost");
  }();
  return name;
}

// "2026-12-06 21:30:05.123" (UTC), as Ranger's audit events show time.
std::string EventTime() {
  auto now = std::chrono::system_clock::now();
  auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(now.time_since_epoch()).count();
  std::time_t secs = static_cast<std::time_t>(ms / 1000);
  std::tm tm{};
  ::gmtime_r(&secs, &tm);
  return fmt::format("{:04}-{:02}-{:02} {:02}:{:02}:{:02}.{:03}", tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday,
                     tm.tm_hour, tm.tm_min, tm.tm_sec, ms % 1000);
}

std::string NewRequestId() {
  thread_local std::mt19937_64 rng{std::random_device{}()};
  return fmt::format("{:016x}", rng());
}

std::string_view Parent(std::string_view path) {
  auto slash = path.rfind('/');
  if (slash == std::string_view::npos || slash == 0) return "/";
  return path.substr(0, slash);
}

size_t CurlAppend(char* data, size_t size, size_t n, void* out) {
  auto* s = static_cast<std::string*>(out);
  if (s->size() + size * n > (256u << 20)) return 0;  // a policy download over 256 MiB is refused
  s->append(data, size * n);
  return size * n;
}

}  // namespace

std::string ExplanationJson(const Authorizer::Explanation& e) {
  Json j = {{"result", e.allowed ? "ALLOWED" : "DENIED"},
            {"determined", e.outcome != Decision::Outcome::kNotDetermined},
            {"policy_id", e.policy_id},
            {"policy_name", e.policy_name},
            {"super_user", e.super_user},
            {"version", e.version}};
  return j.dump(-1, ' ', false, Json::error_handler_t::replace);
}

std::string ExplanationText(const Authorizer::Explanation& e, std::string_view fallback) {
  std::string why = e.policy_id >= 0 ? fmt::format("policy {} ({})", e.policy_id, e.policy_name)
                    : e.super_user   ? std::string("a super user or group of the service")
                                     : fmt::format("no policy matched: fallback ({})", fallback);
  return fmt::format("{} by {} [policy version {}]", e.allowed ? "ALLOWED" : "DENIED", why, e.version);
}

std::string_view NeedName(Need n) {
  switch (n) {
    case Need::kNone: return "none";
    case Need::kStatus: return "status";
    case Need::kReadData: return "read";
    case Need::kStat: return "stat";
    case Need::kList: return "list";
    case Need::kWrite: return "write";
    case Need::kManage: return "manage";
    case Need::kAdminOnly: return "admin";
  }
  return "?";
}

void RegisterMetrics() {
  Decisions(true, "native");  // makes every {result,door} series
  LoadFailures();
  AuditFailures();
  VersionGauge().Set(-1);
}

bool Authorizer::IsClusterItself(const security::Identity& who) {
  return who.proof == security::Proof::kClusterSecret && who.acting_for_by.empty();
}

Authorizer::Authorizer(AuthzConfig config)
    : config_(std::move(config)),
      fallback_allows_(config_.fallback == "allow"),
      audit_allowed_(config_.audit == "all"),
      fail_closed_(config_.audit_failure == "deny") {}

Authorizer::~Authorizer() {
  {
    std::lock_guard lock(stop_mu_);
    stopping_ = true;
  }
  stop_cv_.notify_all();
  if (poller_.joinable()) poller_.join();
}

Result<std::unique_ptr<Authorizer>> Authorizer::Start(const AuthzConfig& config, const std::string& state_dir,
                                                      const std::string& worker_id, std::function<void()> on_change) {
  std::unique_ptr<Authorizer> a(new Authorizer(config));
  a->on_change_ = std::move(on_change);
  RegisterMetrics();
  a->cache_path_ = config.policy_cache.empty() ? state_dir + "/ranger-policies.json" : config.policy_cache;
  if (config.audit != "off") {
    std::string file = config.audit_file.empty() ? state_dir + "/audit/shoal-audit.log" : config.audit_file;
    if (file.back() == '/') file += (worker_id.empty() ? std::string("worker") : worker_id) + ".log";
    auto log = AuditLog::Open(file, config.audit_max_bytes, config.audit_keep);
    if (!log) return std::unexpected(log.error());
    a->audit_ = std::move(*log);
  }
  if (!config.policy_file.empty()) {
    auto set = LoadServicePolicies(config.policy_file);
    if (!set) {
      return Err(Code::kInvalidArgument, "authz.policy_file: " + set.error().message() +
                                             " (fix the file, or export it again from Ranger admin)");
    }
    a->Install(std::make_shared<PolicyEngine>(std::move(*set)), config.policy_file);
  }
  if (!config.ranger_url.empty()) {
    if (!a->Engine()) {
      std::error_code ec;
      if (std::filesystem::exists(a->cache_path_ + ".roles", ec)) {
        auto roles = ParseRangerRoles(ReadFileText(a->cache_path_ + ".roles").value_or(""), a->cache_path_ + ".roles");
        if (roles) {
          a->role_version_ = roles->first;
          a->roles_ = std::move(roles->second);
        }
      }
      if (std::filesystem::exists(a->cache_path_, ec)) {
        std::string text = ReadFileText(a->cache_path_).value_or("");
        auto cached = ParseServicePolicies(text, a->cache_path_);
        if (cached) {
          a->policies_text_ = std::move(text);
          cached->roles.insert(cached->roles.end(), a->roles_.begin(), a->roles_.end());
          a->Install(std::make_shared<PolicyEngine>(std::move(*cached)), a->cache_path_ + " (the last download)");
        } else {
          spdlog::warn("authz: the kept policy download {} is not usable: {}", a->cache_path_,
                       cached.error().message());
        }
      }
    }
    a->PollOnce();
    a->poller_ = std::thread([p = a.get()] { p->PollLoop(); });
  }
  if (!a->Engine()) {
    spdlog::warn(
        "authz: no policies yet (Ranger admin at {} not reached, nothing kept): every request gets "
        "the fallback ({}) until a download succeeds",
        config.ranger_url, config.fallback);
    a->Install(std::make_shared<PolicyEngine>(PolicySet{}), "nothing");
  }
  return a;
}

std::shared_ptr<const PolicyEngine> Authorizer::Engine() const {
  std::lock_guard lock(mu_);
  return engine_;
}

int64_t Authorizer::version() const {
  auto e = Engine();
  return e ? e->version() : -1;
}

void Authorizer::Install(std::shared_ptr<const PolicyEngine> engine, std::string_view from) {
  for (const auto& note : engine->notes()) spdlog::warn("authz: {}", note);
  spdlog::info("authz: enforcing {} policies of service '{}', version {}, from {}", engine->policy_count(),
               engine->service(), engine->version(), from);
  VersionGauge().Set(static_cast<double>(engine->version()));
  bool replaced = false;
  {
    std::lock_guard lock(mu_);
    replaced = engine_ != nullptr;
    engine_ = std::move(engine);
  }
  if (replaced && on_change_) on_change_();
}

// One GET from Ranger admin: the HTTP status (0 when none came) and body, or curl's error.
struct Authorizer::Download {
  long status = 0;
  std::string body;
  std::string error;
};

Authorizer::Download Authorizer::Get(const std::string& url) const {
  Download d;
  CURL* h = curl_easy_init();
  if (h == nullptr) {
    d.error = "curl_easy_init failed";
    return d;
  }
  long timeout_ms = static_cast<long>(std::min<int64_t>(config_.poll_interval.count(), 10'000));
  curl_easy_setopt(h, CURLOPT_URL, url.c_str());
  curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, CurlAppend);
  curl_easy_setopt(h, CURLOPT_WRITEDATA, &d.body);
  curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, timeout_ms);
  curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS, std::min(timeout_ms, 3000L));
  curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(h, CURLOPT_PROTOCOLS_STR, "http,https");
  std::string userpwd = config_.ranger_user + ":" + config_.ranger_password;
  if (!config_.ranger_user.empty()) {
    curl_easy_setopt(h, CURLOPT_HTTPAUTH, CURLAUTH_BASIC);
    curl_easy_setopt(h, CURLOPT_USERPWD, userpwd.c_str());
  }
  CURLcode rc = curl_easy_perform(h);
  curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &d.status);
  curl_easy_cleanup(h);
  if (rc != CURLE_OK) d.error = curl_easy_strerror(rc);
  return d;
}

bool Authorizer::PollOnce() {
  const int64_t known = version();
  // With credentials, the download paths Ranger protects with basic auth.
  const std::string secure = config_.ranger_user.empty() ? "" : "secure/";
  const std::string plugin = "shoal@" + Hostname() + "-" + config_.ranger_service;
  auto fail = [&](std::string_view what, const std::string& why) {
    LoadFailures().Add();
    spdlog::warn("authz: {} download from {} failed: {}; keeping policy version {}", what, config_.ranger_url, why,
                 known);
    return false;
  };
  auto http_error = [](long status) {
    return fmt::format("HTTP {}{}", status,
                       status == 401 || status == 403 ? " (check authz.ranger_user and ranger_password)"
                       : status == 404                ? " (is authz.ranger_service the service's name?)"
                                                      : "");
  };
  Download policies = Get(fmt::format(
      "{}/service/plugins/{}policies/download/{}?lastKnownVersion={}&supportsPolicyDeltas=false&pluginId={}",
      config_.ranger_url, secure, config_.ranger_service, known, plugin));
  if (!policies.error.empty()) return fail("policy", policies.error);
  if (policies.status != 200 && policies.status != 304) return fail("policy", http_error(policies.status));
  // Roles live apart in Ranger admin (its roles download); role members change without a policy version.
  Download roles = Get(fmt::format("{}/service/roles/{}download/{}?lastKnownRoleVersion={}&pluginId={}",
                                   config_.ranger_url, secure, config_.ranger_service, role_version_, plugin));
  bool changed = false;
  if (roles.error.empty() && roles.status == 200) {
    auto parsed = ParseRangerRoles(roles.body, "the roles download");
    if (!parsed) {
      fail("roles", parsed.error().message());
    } else if (parsed->first != role_version_) {
      role_version_ = parsed->first;
      roles_ = std::move(parsed->second);
      (void)WriteFileAtomic(cache_path_ + ".roles", roles.body, 0600);
      changed = true;
    }
  } else if (roles.status != 304 && roles.status != 404) {
    // 404: a Ranger without roles for the service (or an older one); anything else is a failure.
    fail("roles", roles.error.empty() ? http_error(roles.status) : roles.error);
  }
  if (policies.status == 200) {
    auto set = ParseServicePolicies(policies.body, "the download");
    if (!set) return fail("policy", set.error().message());
    if (set->version < 0 || set->version != known) {
      if (auto kept = WriteFileAtomic(cache_path_, policies.body, 0600); !kept.ok()) {
        spdlog::warn(
            "authz: cannot keep the policy download in {}: the next start without Ranger admin uses older "
            "policies (set authz.policy_cache to a writable file)",
            cache_path_);
      }
      policies_text_ = std::move(policies.body);
      changed = true;
    }
  }
  if (!changed || policies_text_.empty()) return true;
  auto set = ParseServicePolicies(policies_text_, "the download");
  if (!set) return fail("policy", set.error().message());
  set->roles.insert(set->roles.end(), roles_.begin(), roles_.end());
  Install(std::make_shared<PolicyEngine>(std::move(*set)), config_.ranger_url);
  return true;
}

void Authorizer::PollLoop() {
  std::unique_lock lock(stop_mu_);
  while (!stop_cv_.wait_for(lock, config_.poll_interval, [this] { return stopping_; })) {
    lock.unlock();
    PollOnce();
    lock.lock();
  }
}

Authorizer::Explanation Authorizer::Explain(std::string_view user, const std::vector<std::string>& groups,
                                            std::string_view path, AccessType access) const {
  return authz::Explain(*Engine(), user, groups, path, access, fallback_allows_);
}

Authorizer::Explanation Explain(const PolicyEngine& engine, std::string_view user,
                                const std::vector<std::string>& groups, std::string_view path, AccessType access,
                                bool fallback_allows) {
  Authorizer::Explanation e;
  e.version = engine.version();
  Decision d = engine.Evaluate({user, groups, path, access});
  e.outcome = d.outcome;
  e.super_user = d.super_user;
  e.allowed = d.determined() ? d.allowed() : fallback_allows;
  if (d.policy != nullptr) {
    e.policy_id = d.policy->id;
    e.policy_name = d.policy->name;
  }
  return e;
}

CheckAnswer Authorizer::Check(const CheckRequest& req) {
  if (req.need == Need::kNone || req.who == nullptr || IsClusterItself(*req.who)) return {};
  const security::Identity& who = *req.who;
  const bool admin = std::any_of(who.groups.begin(), who.groups.end(), [this](const std::string& g) {
    return std::find(config_.admin_groups.begin(), config_.admin_groups.end(), g) != config_.admin_groups.end();
  });
  if (req.need == Need::kStatus && (config_.status_open || admin)) return {};
  auto engine = Engine();
  const bool fallback = fallback_allows_;
  // One access: the decision and whether it allows (the fallback when no policy decided).
  auto decide = [&](std::string_view path, AccessType access, Decision* out) {
    *out = engine->Evaluate({who.user, who.groups, path, access});
    return out->determined() ? out->allowed() : fallback;
  };
  Decision d;
  AccessType access = AccessType::kRead;
  bool allowed = false;
  switch (req.need) {
    case Need::kNone: return {};
    case Need::kStatus:
    case Need::kAdminOnly: allowed = admin; break;
    case Need::kManage:
      access = AccessType::kWrite;
      allowed = admin || decide(req.path, access, &d);
      break;
    case Need::kReadData: allowed = decide(req.path, access, &d); break;
    case Need::kWrite:
      access = AccessType::kWrite;
      allowed = decide(req.path, access, &d);
      break;
    case Need::kList: {
      // READ_EXECUTE as the HDFS plugin asks it: read allowed, and execute
      // not denied (unless the read was allowed at a higher priority, where
      // Ranger never looks at the lower deny).
      allowed = decide(req.path, AccessType::kRead, &d);
      Decision e = engine->Evaluate({who.user, who.groups, req.path, AccessType::kExecute});
      const bool read_outranks =
          d.allowed() && d.policy != nullptr && e.policy != nullptr && d.policy->priority > e.policy->priority;
      if (e.outcome == Decision::Outcome::kDenied && !read_outranks) {
        allowed = false;
        access = AccessType::kExecute;
        d = e;
      }
      break;
    }
    case Need::kStat: {
      // Any access to the file itself, or traversal of its parent.
      Decision first;
      allowed = decide(req.path, AccessType::kRead, &first);
      Decision other;
      if (!allowed) allowed = decide(Parent(req.path), AccessType::kExecute, &other);
      if (!allowed) allowed = decide(req.path, AccessType::kExecute, &other);
      if (!allowed) allowed = decide(req.path, AccessType::kWrite, &other);
      d = allowed && other.determined() ? other : first;
      break;
    }
  }
  Decisions(allowed, req.door).Add();
  if (audit_ && (audit_allowed_ || !allowed)) {
    Json line = {
        {"id", req.request_id.empty() ? NewRequestId() : std::string(req.request_id)},
        {"evtTime", EventTime()},
        {"repoType", "hdfs"},
        {"repo", engine->service()},
        {"reqUser", who.anonymous() ? std::string() : who.user},
        {"groups", who.groups},
        {"access", std::string(AccessTypeName(access))},
        {"action", std::string(req.action.empty() ? NeedName(req.need) : req.action)},
        {"resource", std::string(req.path)},
        {"resType", "path"},
        {"result", allowed ? 1 : 0},
        {"policy", d.policy ? d.policy->id : -1},
        {"policyVersion", engine->version()},
        {"enforcer", d.policy       ? "ranger-acl"
                     : d.super_user ? "ranger-super-user"
                     : admin        ? "shoal-admin-group"
                                    : "shoal-fallback"},
        {"cliIP", std::string(req.client_address)},
        {"agent", "shoal-worker"},
        {"agentHost", Hostname()},
        {"door", std::string(kClientDoors[DoorIndex(req.door)])},  // a client's label: one of the known names
        {"logType", "RangerAudit"},
    };
    if (!who.acting_for_by.empty()) line["proxyUser"] = who.acting_for_by;
    if (!audit_->Append(line.dump(-1, ' ', false, Json::error_handler_t::replace))) {
      AuditFailures().Add();
      spdlog::error("authz: {}: {} the request (authz.audit_failure: {})", audit_->last_error(),
                    fail_closed_ ? "refusing" : "still answering", config_.audit_failure);
      if (fail_closed_) {
        return {false, Status(Code::kUnavailable, "refused: the worker cannot write its audit log (" +
                                                      audit_->last_error() + "); tell the operator")};
      }
    }
  }
  if (allowed) return {};
  // A user who may not list the parent learns nothing from the refusal.
  if (req.need != Need::kStatus && req.need != Need::kAdminOnly) {
    Decision pr, pe;
    std::string_view parent = Parent(req.path);
    if (!decide(parent, AccessType::kRead, &pr) || !decide(parent, AccessType::kExecute, &pe)) {
      return {false, Status(Code::kNotFound, fmt::format("no such file or directory: {}", req.path))};
    }
  }
  const std::string name = who.anonymous() ? std::string("anonymous") : who.user;
  if (req.need == Need::kStatus || req.need == Need::kAdminOnly) {
    return {false, Status(Code::kPermissionDenied,
                          fmt::format("{} may not use {}: it needs a group of the workers' authz.admin_groups (or "
                                      "the cluster secret)",
                                      name, req.action.empty() ? NeedName(req.need) : req.action))};
  }
  std::string by = d.policy ? fmt::format("policy {} ({})", d.policy->id, d.policy->name)
                            : fmt::format("no policy matched: fallback ({})", config_.fallback);
  return {false,
          Status(Code::kPermissionDenied,
                 fmt::format("{} may not {} {} (denied by {}; shoal policy check --user {} --path {} --access {} "
                             "explains it)",
                             name, AccessTypeName(access), req.path, by, who.anonymous() ? "''" : who.user, req.path,
                             AccessTypeName(access)))};
}

}  // namespace shoal::authz
