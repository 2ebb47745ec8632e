// Cloud credentials that expire: the seam every store's identity goes through.
//
// A Provider fetches one secret (AWS keys with a session token, or an OAuth
// bearer token for Google and Azure) from wherever a cluster hands them out:
// instance metadata, STS, a token endpoint, a file, a program. A
// CredentialCache holds one provider's current secret for a mount and
// refreshes it in the background before it expires (once, shared by every
// thread), so requests never wait on a refresh and are never signed with an
// expired secret: a reader that finds the held secret inside its last
// `must_refresh` window refreshes it itself (single-flight) before signing.
//
//   auto cache = CredentialCache::Start(std::move(provider), {.mount = "/data"});
//   if (!cache) return Err(cache.error());             // names the provider and why
//   auto secret = (*cache)->Current();                  // Result<shared_ptr<const Secret>>
//
// Messages never carry a secret. Metrics (one set per mount):
//   shoal_ufs_credential_refreshes_total{mount,provider,result="ok"|"failed"}
//   shoal_ufs_credential_expiry_seconds{mount,provider}   unix time; 0 = never
//
// Thread safety: Current() and info() may be called from any thread.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

#include "shoal/status.h"

namespace shoal::cloud {

using WallClock = std::chrono::system_clock;

// What a provider hands over.
struct Secret {
  // AWS (SigV4): empty access_key_id when this is a bearer token.
  std::string access_key_id;
  std::string secret_access_key;
  std::string session_token;
  // Google / Azure: "Authorization: Bearer <bearer_token>".
  std::string bearer_token;
  // When it stops working; max() for a secret that does not expire.
  WallClock::time_point expires = WallClock::time_point::max();

  bool expiring() const { return expires != WallClock::time_point::max(); }
};

// Reads one environment variable (unset and empty read as nullopt);
// injectable so tests and the cross-checks stay hermetic.
using Env = std::function<std::optional<std::string>(std::string_view name)>;
Env ProcessEnvironment();

class Provider {
 public:
  virtual ~Provider() = default;
  // What operators read in `shoal up`, `shoal status` and metrics:
  // "instance-metadata", "web-identity", "environment", "service-account", ...
  virtual std::string name() const = 0;
  // Where it came from, for messages: "http://169.254.169.254 role ml-node",
  // "profile 'train' in /root/.aws/config". Never a secret.
  virtual std::string detail() const { return {}; }
  // One fetch. Errors name the provider, the endpoint or file, and what to do.
  virtual Result<Secret> Fetch() = 0;
};

class CredentialCache {
 public:
  struct Options {
    std::string mount;  // for messages and metric labels
    // Refresh this long before expiry (capped at half a secret's lifetime,
    // so short-lived test credentials refresh too).
    std::chrono::seconds refresh_ahead{300};
    // A reader never signs with a secret this close to its expiry (capped at
    // a quarter of its lifetime): it refreshes first.
    std::chrono::seconds must_refresh{30};
    // Retry pause after a failed background refresh (doubling, capped at 30 s
    // and at the time left before expiry).
    std::chrono::milliseconds retry_pause{500};
  };

  // Fetches once (errors are the provider's), then refreshes in the
  // background while the cache lives. `first` skips the first fetch when the
  // caller already has the provider's secret (a chain that probed it).
  static Result<std::shared_ptr<CredentialCache>> Start(std::unique_ptr<Provider> provider, Options options,
                                                        std::optional<Secret> first = std::nullopt);
  ~CredentialCache();
  CredentialCache(const CredentialCache&) = delete;
  CredentialCache& operator=(const CredentialCache&) = delete;

  // The secret to sign with now: never expired, never inside must_refresh.
  // Fails only when it has expired and a refresh failed.
  Result<std::shared_ptr<const Secret>> Current();

  struct Info {
    std::string provider;
    std::string detail;
    WallClock::time_point expires = WallClock::time_point::max();
    uint64_t refreshes = 0;  // successful fetches after the first
    uint64_t failures = 0;
    std::string last_error;  // "" when the last fetch worked
  };
  Info info() const;
  // "instance-metadata (http://..., role r), expires 2026-12-07T01:02:03Z"
  std::string Describe() const;

 private:
  CredentialCache(std::unique_ptr<Provider> provider, Options options);
  void RefreshLoop();
  // Fetches and installs; called with refresh_mu_ held.
  Status RefreshLocked();
  WallClock::time_point NextRefresh(const Secret& s, WallClock::time_point fetched) const;

  std::unique_ptr<Provider> provider_;
  Options options_;
  std::mutex refresh_mu_;  // one fetch at a time
  mutable std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false;
  std::shared_ptr<const Secret> current_;
  WallClock::time_point fetched_at_{};
  Info info_;
  std::thread thread_;
};

// Every live cache of this process by mount: what `shoal status` and the
// startup lines show.
std::vector<std::pair<std::string, CredentialCache::Info>> RegisteredCredentials();
// The live cache's info for `mount`, else what the last one said when it
// closed (a probe's); nullopt when the mount never had one.
std::optional<CredentialCache::Info> LastCredentialsOf(const std::string& mount);
// "instance-metadata (http://..., role r), expires 2026-12-07T01:02:03Z"
std::string DescribeInfo(const CredentialCache::Info& info);

// "2026-12-07T01:02:03Z"; "never" for max().
std::string FormatExpiry(WallClock::time_point t);
// Parses "2026-12-07T01:02:03Z" (fractional seconds and "+00:00" allowed).
std::optional<WallClock::time_point> ParseIso8601(std::string_view text);

// The longest key, secret or token an endpoint may hand out (AWS session
// tokens and Entra ID JWTs run to a few KiB).
inline constexpr size_t kMaxSecretField = 16 << 10;
// Every field of a Secret that an endpoint, a process or a file handed out
// goes into request headers, so each must be visible ASCII (no space, no
// control byte: a CR LF would add headers) and at most kMaxSecretField bytes.
// kIo naming `who` and the field (never its value) otherwise.
Status CheckSecretFields(std::string_view who, const Secret& s);

// A chain: the providers of a scheme in precedence order. Each candidate says
// whether it is configured here (and why not); the first configured one whose
// fetch works wins. A configured provider that fails stops the chain (as the
// SDKs do) unless it is a `probe` (instance metadata: absent off the cloud).
struct Candidate {
  std::string name;
  std::string not_configured;  // why it does not apply here; "" when it does
  bool probe = false;
  std::function<Result<std::unique_ptr<Provider>>()> make;  // called only when configured
};
struct Chosen {
  std::unique_ptr<Provider> provider;
  Secret first;
};
// kPermissionDenied listing every candidate and why it gave nothing, ending with
// `advice`, when none worked; a configured provider's error otherwise.
Result<Chosen> RunChain(std::string_view what, std::vector<Candidate> candidates, std::string_view advice);

}  // namespace shoal::cloud
