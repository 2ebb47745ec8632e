#include "ufs/cloud/credential_cache.h"

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <map>

#include <spdlog/spdlog.h>

#include "common/metrics.h"

namespace shoal::cloud {
namespace {

using std::chrono::duration_cast;
using std::chrono::milliseconds;
using std::chrono::seconds;

// Every live cache by mount, for status and the startup lines.
std::mutex registry_mu;
std::map<std::string, std::weak_ptr<CredentialCache>>& Registry() {
  static auto* r = new std::map<std::string, std::weak_ptr<CredentialCache>>;
  return *r;
}
// What the last cache of a mount said when it closed (a probe's, `shoal up`'s).
std::map<std::string, CredentialCache::Info>& Retired() {
  static auto* r = new std::map<std::string, CredentialCache::Info>;
  return *r;
}

void Count(const std::string& mount, const std::string& provider, bool ok) {
  MetricsRegistry::Global()
      .GetCounter("shoal_ufs_credential_refreshes_total",
                  "Fetches of a mount's store credentials after the first, by provider and result",
                  {{"mount", mount}, {"provider", provider}, {"result", ok ? "ok" : "failed"}})
      .Add();
}

void ShowExpiry(const std::string& mount, const std::string& provider, WallClock::time_point t) {
  int64_t v = t == WallClock::time_point::max() ? 0 : duration_cast<seconds>(t.time_since_epoch()).count();
  MetricsRegistry::Global()
      .GetGauge("shoal_ufs_credential_expiry_seconds",
                "When a mount's store credentials expire (unix time; 0: they do not)",
                {{"mount", mount}, {"provider", provider}})
      .Set(v);
}

}  // namespace

Env ProcessEnvironment() {
  return [](std::string_view name) -> std::optional<std::string> {
    const char* v = std::getenv(std::string(name).c_str());
    if (!v || !*v) return std::nullopt;
    return std::string(v);
  };
}

std::string FormatExpiry(WallClock::time_point t) {
  if (t == WallClock::time_point::max()) return "never";
  std::time_t tt = WallClock::to_time_t(t);
  std::tm tm{};
  gmtime_r(&tt, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

std::optional<WallClock::time_point> ParseIso8601(std::string_view text) {
  // YYYY-MM-DDTHH:MM:SS[.fff][Z|+00:00]
  if (text.size() < 19) return std::nullopt;
  std::tm tm{};
  int y, mo, d, h, mi, s;
  std::string head(text.substr(0, 19));
  if (std::sscanf(head.c_str(), "%4d-%2d-%2dT%2d:%2d:%2d", &y, &mo, &d, &h, &mi, &s) != 6 &&
      std::sscanf(head.c_str(), "%4d-%2d-%2d %2d:%2d:%2d", &y, &mo, &d, &h, &mi, &s) != 6) {
    return std::nullopt;
  }
  // Years past these overflow system_clock's nanoseconds (1678-2262), and no
  // store or token endpoint means them.
  if (y < 1900 || y > 2200 || mo < 1 || mo > 12 || d < 1 || d > 31 || h < 0 || h > 23 || mi < 0 || mi > 59 || s < 0 ||
      s > 60) {
    return std::nullopt;
  }
  std::string_view rest = text.substr(19);
  int64_t frac_ns = 0;
  if (!rest.empty() && rest.front() == '.') {
    rest.remove_prefix(1);
    for (int64_t scale = 100'000'000; !rest.empty() && rest.front() >= '0' && rest.front() <= '9'; scale /= 10) {
      frac_ns += (rest.front() - '0') * scale;
      rest.remove_prefix(1);
    }
  }
  long offset = 0;
  if (rest == "Z" || rest.empty()) {
  } else if (rest.size() == 6 && (rest[0] == '+' || rest[0] == '-') && rest[3] == ':' &&
             std::isdigit(static_cast<unsigned char>(rest[1])) && std::isdigit(static_cast<unsigned char>(rest[2])) &&
             std::isdigit(static_cast<unsigned char>(rest[4])) && std::isdigit(static_cast<unsigned char>(rest[5]))) {
    int oh = (rest[1] - '0') * 10 + (rest[2] - '0'), om = (rest[4] - '0') * 10 + (rest[5] - '0');
    if (oh > 23 || om > 59) return std::nullopt;
    offset = (rest[0] == '+' ? 1 : -1) * (oh * 3600L + om * 60L);
  } else {
    return std::nullopt;
  }
  tm.tm_year = y - 1900;
  tm.tm_mon = mo - 1;
  tm.tm_mday = d;
  tm.tm_hour = h;
  tm.tm_min = mi;
  tm.tm_sec = s;
  std::time_t t = timegm(&tm);
  if (t == -1) return std::nullopt;
  return WallClock::from_time_t(t - offset) +
         std::chrono::duration_cast<WallClock::duration>(std::chrono::nanoseconds(frac_ns));
}

Status CheckSecretFields(std::string_view who, const Secret& s) {
  const std::pair<const char*, const std::string*> fields[] = {{"access key id", &s.access_key_id},
                                                               {"secret access key", &s.secret_access_key},
                                                               {"session token", &s.session_token},
                                                               {"access token", &s.bearer_token}};
  for (const auto& [name, value] : fields) {
    if (value->size() > kMaxSecretField) {
      return Status(Code::kIo, std::string(who) + ": the " + name + " handed out is " + std::to_string(value->size()) +
                                   " bytes, more than any credential (" + std::to_string(kMaxSecretField) +
                                   "): check what answers at that endpoint");
    }
    for (unsigned char c : *value) {
      if (c <= 0x20 || c >= 0x7f) {
        return Status(Code::kIo, std::string(who) + ": the " + name +
                                     " handed out holds a space, a control or a non-ASCII byte, which no credential "
                                     "has: check what answers at that endpoint");
      }
    }
  }
  return Status::Ok();
}

CredentialCache::CredentialCache(std::unique_ptr<Provider> provider, Options options)
    : provider_(std::move(provider)), options_(std::move(options)) {
  info_.provider = provider_->name();
  info_.detail = provider_->detail();
}

Result<std::shared_ptr<CredentialCache>> CredentialCache::Start(std::unique_ptr<Provider> provider, Options options,
                                                                std::optional<Secret> first) {
  std::shared_ptr<CredentialCache> cache(new CredentialCache(std::move(provider), std::move(options)));
  if (!first) {
    auto s = cache->provider_->Fetch();
    if (!s) return Err(s.error());
    first = std::move(*s);
  }
  cache->fetched_at_ = WallClock::now();
  cache->info_.expires = first->expires;
  cache->current_ = std::make_shared<const Secret>(std::move(*first));
  ShowExpiry(cache->options_.mount, cache->info_.provider, cache->info_.expires);
  if (cache->current_->expiring()) cache->thread_ = std::thread([c = cache.get()] { c->RefreshLoop(); });
  std::lock_guard lock(registry_mu);
  Registry()[cache->options_.mount] = cache;
  return cache;
}

CredentialCache::~CredentialCache() {
  {
    std::lock_guard lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
  std::lock_guard lock(registry_mu);
  Retired()[options_.mount] = info_;
}

WallClock::time_point CredentialCache::NextRefresh(const Secret& s, WallClock::time_point fetched) const {
  if (!s.expiring()) return WallClock::time_point::max();
  auto lifetime = s.expires - fetched;
  auto ahead = std::min<WallClock::duration>(options_.refresh_ahead, lifetime / 2);
  return s.expires - std::max<WallClock::duration>(ahead, WallClock::duration::zero());
}

Status CredentialCache::RefreshLocked() {
  auto s = provider_->Fetch();
  std::lock_guard lock(mu_);
  if (!s) {
    ++info_.failures;
    info_.last_error = s.error().message();
    Count(options_.mount, info_.provider, false);
    return s.error();
  }
  ++info_.refreshes;
  info_.last_error.clear();
  info_.expires = s->expires;
  fetched_at_ = WallClock::now();
  current_ = std::make_shared<const Secret>(std::move(*s));
  Count(options_.mount, info_.provider, true);
  ShowExpiry(options_.mount, info_.provider, info_.expires);
  return Status::Ok();
}

void CredentialCache::RefreshLoop() {
  milliseconds pause = options_.retry_pause;
  std::unique_lock lock(mu_);
  while (!stop_) {
    auto when = NextRefresh(*current_, fetched_at_);
    if (cv_.wait_until(lock, when, [&] { return stop_ || NextRefresh(*current_, fetched_at_) != when; })) continue;
    lock.unlock();
    Status st;
    {
      std::lock_guard one(refresh_mu_);
      // A reader may have refreshed while this thread waited for the lock.
      bool still_due;
      {
        std::lock_guard l(mu_);
        still_due = WallClock::now() >= NextRefresh(*current_, fetched_at_);
      }
      if (still_due) st = RefreshLocked();
    }
    lock.lock();
    if (st.ok()) {
      pause = options_.retry_pause;
      continue;
    }
    spdlog::warn("mount {}: refreshing credentials from {} failed (retrying; the held ones expire {}): {}",
                 options_.mount, info_.provider, FormatExpiry(current_->expires), st.message());
    auto left = current_->expires - WallClock::now();
    auto wait = std::min<WallClock::duration>(pause, std::max<WallClock::duration>(left / 4, milliseconds(50)));
    cv_.wait_for(lock, wait, [&] { return stop_; });
    pause = std::min(pause * 2, milliseconds(30'000));
  }
}

Result<std::shared_ptr<const Secret>> CredentialCache::Current() {
  auto usable = [&](const Secret& s, WallClock::time_point fetched) {
    if (!s.expiring()) return true;
    auto margin = std::min<WallClock::duration>(options_.must_refresh, (s.expires - fetched) / 4);
    return WallClock::now() < s.expires - margin;
  };
  {
    std::lock_guard lock(mu_);
    if (usable(*current_, fetched_at_)) return current_;
  }
  // Single flight: the first reader refreshes, the others wait and reuse it.
  std::lock_guard one(refresh_mu_);
  {
    std::lock_guard lock(mu_);
    if (usable(*current_, fetched_at_)) return current_;
  }
  Status st = RefreshLocked();
  std::lock_guard lock(mu_);
  cv_.notify_all();
  if (!st.ok() && WallClock::now() >= current_->expires) {
    return Err(st.code() == Code::kOk ? Code::kUnavailable : st.code(),
               "mount " + options_.mount + ": the credentials from " + info_.provider + " expired at " +
                   FormatExpiry(current_->expires) + " and refreshing them failed: " + st.message());
  }
  return current_;  // a failed refresh with time left: the old secret still works
}

CredentialCache::Info CredentialCache::info() const {
  std::lock_guard lock(mu_);
  return info_;
}

std::string CredentialCache::Describe() const { return DescribeInfo(info()); }

std::vector<std::pair<std::string, CredentialCache::Info>> RegisteredCredentials() {
  std::vector<std::pair<std::string, CredentialCache::Info>> out;
  std::lock_guard lock(registry_mu);
  for (auto it = Registry().begin(); it != Registry().end();) {
    if (auto c = it->second.lock()) {
      out.emplace_back(it->first, c->info());
      ++it;
    } else {
      it = Registry().erase(it);
    }
  }
  return out;
}

std::optional<CredentialCache::Info> LastCredentialsOf(const std::string& mount) {
  std::lock_guard lock(registry_mu);
  if (auto it = Registry().find(mount); it != Registry().end()) {
    if (auto c = it->second.lock()) return c->info();
  }
  if (auto it = Retired().find(mount); it != Retired().end()) return it->second;
  return std::nullopt;
}

std::string DescribeInfo(const CredentialCache::Info& i) {
  std::string out = i.provider;
  if (!i.detail.empty()) out += " (" + i.detail + ")";
  out += i.expires == WallClock::time_point::max() ? ", static" : ", expires " + FormatExpiry(i.expires);
  return out;
}

Result<Chosen> RunChain(std::string_view what, std::vector<Candidate> candidates, std::string_view advice) {
  std::string tried;
  for (auto& c : candidates) {
    if (!tried.empty()) tried += "; ";
    if (!c.not_configured.empty()) {
      tried += c.name + ": " + c.not_configured;
      continue;
    }
    auto p = c.make();
    if (!p) {
      if (c.probe) {
        tried += c.name + ": " + p.error().message();
        continue;
      }
      return Err(p.error().code(), std::string(what) + ": the " + c.name + " provider is configured but " +
                                       "cannot be set up: " + p.error().message());
    }
    auto s = (*p)->Fetch();
    if (s) return Chosen{std::move(*p), std::move(*s)};
    if (c.probe) {
      tried += c.name + ": " + s.error().message();
      continue;
    }
    return Err(s.error().code(), std::string(what) + ": the " + c.name +
                                     " provider is configured here but failed: " + s.error().message());
  }
  return Err(Code::kPermissionDenied,
             std::string(what) + ": no credentials found; tried " + tried + ". " + std::string(advice));
}

}  // namespace shoal::cloud
