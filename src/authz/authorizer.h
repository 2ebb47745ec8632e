// Authorizer: the worker's one authorization check. It holds the current
// policies (a PolicyEngine swapped whole when new ones arrive), decides each
// request's access for its end user, writes the audit line before the answer
// and counts decisions.
//
// Where policies come from (authz.* in the worker's config):
//   - authz.policy_file: a Ranger ServicePolicies JSON file, read at start
//     (a bad file stops the worker with the reason);
//   - authz.ranger_url + ranger_service: Ranger admin, polled every
//     poll_interval with lastKnownVersion (304: unchanged). Each good
//     download is kept in policy_cache and used at the next start, so a
//     Ranger outage or a restart changes nothing; a download that does not
//     parse never replaces good policies (one log line, a metric, the
//     version kept).
//
// What a request needs (Need) is declared per route in the worker's route
// table; Check applies it. The cluster's own processes (the cluster secret
// with no end user named) and the worker's own user on the short-circuit
// socket are not subject to policies: they already hold every byte.
//
// Thread safety: Check, Explain and version are safe from any thread.
#pragma once

#include <atomic>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>

#include "authz/audit_log.h"
#include "authz/policy_engine.h"
#include "common/config.h"
#include "security/identity.h"

namespace shoal::authz {

// What a route needs, checked on its `path` parameter.
enum class Need : uint8_t {
  kNone,       // health, metrics, peer traffic: no policy applies
  kStatus,     // status documents: open (authz.status_open) or an admin group
  kReadData,   // the bytes of a file: read
  kStat,       // a file's attributes: execute on its parent, or any access to it
  kList,       // a directory's entries: read and execute on it
  kWrite,      // a write, delete or rename: write
  kManage,     // load, free, pin, rules: write on the path, or an admin group
  kAdminOnly,  // no path (scrub, stopping a load, policy checks): an admin group
};

std::string_view NeedName(Need n);

struct CheckRequest {
  const security::Identity* who = nullptr;
  Need need = Need::kNone;
  std::string_view path;  // namespace path ("" for kStatus, kAdminOnly)
  std::string_view door;  // "native", "fuse", "s3", "python", "cli", "short-circuit"
  std::string_view client_address;
  std::string_view request_id;
  std::string_view action;  // the route or operation, for the audit line
};

struct CheckAnswer {
  bool allowed = true;
  // Refused: kPermissionDenied naming the user, access and path (and the
  // policy), or kNotFound when the user may not even list the parent.
  Status refusal;
};

class Authorizer {
 public:
  // `state_dir`: where the audit log and the policy cache go unless the
  // config names them. An audit_file ending in '/' is a directory holding
  // one file per worker, `<worker_id>.log` (workers sharing a state dir).
  // `on_change` runs after new policies replace the ones in force (not for
  // the first ones): the worker revokes the short-circuit leases it gave.
  static Result<std::unique_ptr<Authorizer>> Start(const AuthzConfig& config, const std::string& state_dir,
                                                   const std::string& worker_id, std::function<void()> on_change = {});
  ~Authorizer();
  Authorizer(const Authorizer&) = delete;
  Authorizer& operator=(const Authorizer&) = delete;

  CheckAnswer Check(const CheckRequest& request);

  // One decision without audit: what `shoal policy check` prints.
  struct Explanation {
    Decision::Outcome outcome = Decision::Outcome::kNotDetermined;
    bool allowed = false;  // with the fallback applied
    int64_t policy_id = -1;
    std::string policy_name;
    bool super_user = false;
    int64_t version = -1;
  };
  Explanation Explain(std::string_view user, const std::vector<std::string>& groups, std::string_view path,
                      AccessType access) const;

  int64_t version() const;

  // Whether `who` is exempt from policies (the cluster's own processes).
  static bool IsClusterItself(const security::Identity& who);

 private:
  explicit Authorizer(AuthzConfig config);
  std::shared_ptr<const PolicyEngine> Engine() const;
  void Install(std::shared_ptr<const PolicyEngine> engine, std::string_view from);
  // Ranger admin: one download of the policies and one of the roles; true
  // when policies were installed or unchanged.
  bool PollOnce();
  struct Download;
  Download Get(const std::string& url) const;
  void PollLoop();

  const AuthzConfig config_;
  const bool fallback_allows_;  // authz.fallback: allow
  const bool audit_allowed_;    // authz.audit: all (deny: refusals only)
  const bool fail_closed_;      // authz.audit_failure: deny
  std::string cache_path_;
  mutable std::mutex mu_;
  std::shared_ptr<const PolicyEngine> engine_;  // guarded by mu_ (copied out under it)
  std::function<void()> on_change_;
  // Ranger admin's last good downloads (PollOnce's thread, and Start before it runs).
  std::string policies_text_;
  std::vector<Role> roles_;
  int64_t role_version_ = -1;
  std::unique_ptr<AuditLog> audit_;
  std::mutex stop_mu_;
  std::condition_variable stop_cv_;
  bool stopping_ = false;
  std::thread poller_;
};

// Makes the authorization series (at 0, the version at -1) so they are served
// from a worker's start, policies or not.
void RegisterMetrics();

// One decision of `engine`, the fallback applied when no policy decides.
Authorizer::Explanation Explain(const PolicyEngine& engine, std::string_view user,
                                const std::vector<std::string>& groups, std::string_view path, AccessType access,
                                bool fallback_allows);

// {"result": "ALLOWED"|"DENIED", "determined", "policy_id", "policy_name",
// "super_user", "version"}: GET /v1/policy/check's answer.
std::string ExplanationJson(const Authorizer::Explanation& e);
// "DENIED by policy 3 (deny eve) [policy version 7]": what `shoal policy check` prints.
std::string ExplanationText(const Authorizer::Explanation& e, std::string_view fallback);

}  // namespace shoal::authz
