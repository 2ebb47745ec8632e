// RequestGuard: the one access check of a listener. Every route names the
// Access it needs in its route table; the table's wrapper calls Admit before
// the handler, and nothing else decides access.
//
// The request's identity comes from, in order: its Authorization header (the
// cluster secret, or a bearer token signed with the cluster key), else the
// verified TLS client certificate of its connection, else none (anonymous).
// A door trusted to act for others (the cluster secret's holders, or
// security.proxy_users) may name the end user in X-Shoal-On-Behalf-Of; any
// other credential may name only itself there (no elevation: a personal
// FUSE mount with its owner's token works unchanged).
//
// A credential that is presented and bad is refused (401) even where none is
// needed: a bad credential is never taken as none. Without one, a request is
// refused when cluster.secret or security.required asks for one (health
// routes excepted; metrics too, unless security.required).
//
// Thread safety: Admit is safe from any thread (the guard is immutable).
#pragma once

#include <expected>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "net/http_server.h"
#include "security/access.h"
#include "security/identity.h"
#include "security/token.h"
#include "shoal/status.h"

namespace shoal::security {

// The header a trusted door names its end user in: "alice" or "alice;groups=a,b".
inline constexpr std::string_view kOnBehalfHeader = "X-Shoal-On-Behalf-Of";

class RequestGuard {
 public:
  struct Options {
    std::string cluster_secret;               // cluster.secret ("": none)
    bool required = false;                    // security.required
    std::shared_ptr<const TokenKeys> tokens;  // null: tokens are refused
    std::vector<std::string> proxy_users;
  };
  explicit RequestGuard(Options options) : options_(std::move(options)) {}

  struct Refusal {
    int http_status;     // 401 or 403
    Status status;       // one line saying what failed and what to do
    const char* reason;  // for the refusals counter: "no_credential", "bad_token", ...
  };
  std::expected<Identity, Refusal> Admit(const net::HttpRequest& request, Access access) const;

  // Whether `id` (a request's own credential) may name another end user in
  // kOnBehalfHeader: the cluster secret's holders and security.proxy_users.
  bool MayActForOthers(const Identity& id) const;

  // The end user a kOnBehalfHeader value names ("USER" or "USER;groups=A,B",
  // names IsHeaderSafeName), without proof or door: nullopt when malformed.
  // The short circuit carries the same value (common/local_wire.h).
  static std::optional<Identity> ParseEndUser(std::string_view value);

  bool demands_credentials() const { return options_.required || !options_.cluster_secret.empty(); }

 private:
  std::expected<Identity, Refusal> FromCredentials(const net::HttpRequest& request) const;

  Options options_;
};

}  // namespace shoal::security
