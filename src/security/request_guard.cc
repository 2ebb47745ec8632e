#include "security/request_guard.h"

#include <openssl/crypto.h>

#include <algorithm>

#include "common/end_user.h"

namespace shoal::security {
namespace {

constexpr std::string_view kBearer = "Bearer ";

RequestGuard::Refusal Unauthenticated(std::string message, const char* reason) {
  return {401, Status(Code::kPermissionDenied, std::move(message)), reason};
}

RequestGuard::Refusal SecretRefusal(const char* reason) {
  return {403,
          Status(Code::kPermissionDenied,
                 "this worker requires the cluster secret: the request carried none or a wrong one (set "
                 "cluster.secret in the client's config to the workers' value; `shoal up` writes it into "
                 "STATE/shoal.yaml)"),
          reason};
}

// "alice;groups=a,b" -> user, groups; false when malformed.
bool ParseOnBehalf(std::string_view v, Identity* id) {
  auto semi = v.find(';');
  id->user = std::string(v.substr(0, semi));
  if (!IsHeaderSafeName(id->user)) return false;
  if (semi == std::string_view::npos) return true;
  std::string_view rest = v.substr(semi + 1);
  if (!rest.starts_with("groups=")) return false;
  rest.remove_prefix(7);
  while (!rest.empty() && id->groups.size() < 256) {
    auto comma = rest.find(',');
    std::string_view g = rest.substr(0, comma);
    if (!g.empty() && !IsHeaderSafeName(g)) return false;
    if (!g.empty()) id->groups.emplace_back(g);
    rest = comma == std::string_view::npos ? std::string_view() : rest.substr(comma + 1);
  }
  return true;
}

}  // namespace

std::expected<Identity, RequestGuard::Refusal> RequestGuard::FromCredentials(const net::HttpRequest& req) const {
  Identity id;
  if (const std::string* h = req.Header("Authorization")) {
    if (!h->starts_with(kBearer)) {
      if (!options_.cluster_secret.empty()) return std::unexpected(SecretRefusal("wrong_secret"));
      return std::unexpected(Unauthenticated(
          "unsupported Authorization scheme: send `Authorization: Bearer TOKEN` (a token from `shoal token issue`)",
          "bad_scheme"));
    }
    std::string_view bearer = std::string_view(*h).substr(kBearer.size());
    const std::string& secret = options_.cluster_secret;
    // Compared in constant time: the answer's timing says nothing of the secret.
    if (!secret.empty() && bearer.size() == secret.size() &&
        CRYPTO_memcmp(bearer.data(), secret.data(), secret.size()) == 0) {
      id.user = "cluster";
      id.proof = Proof::kClusterSecret;
      return id;
    }
    if (LooksLikeToken(bearer) || bearer.size() > kMaxTokenBytes) {
      if (!options_.tokens) {
        return std::unexpected(Unauthenticated(
            "token refused: this worker accepts no tokens (security.token_key_file is not set in its config)",
            "tokens_off"));
      }
      auto verified = options_.tokens->Verify(bearer, UnixNow());
      if (!verified) return std::unexpected(Unauthenticated(verified.error().message(), "bad_token"));
      return *verified;
    }
    if (!secret.empty()) {
      return std::unexpected(SecretRefusal("wrong_secret"));
    }
    return std::unexpected(
        Unauthenticated("the bearer credential is neither a token nor this cluster's secret", "bad_credential"));
  }
  if (req.transport && !req.transport->peer_name.empty()) {
    id.user = req.transport->peer_name;
    id.proof = Proof::kCertificate;
  }
  return id;
}

std::optional<Identity> RequestGuard::ParseEndUser(std::string_view value) {
  Identity end;
  if (!ParseOnBehalf(value, &end)) return std::nullopt;
  return end;
}

bool RequestGuard::MayActForOthers(const Identity& id) const {
  if (id.proof == Proof::kClusterSecret) return true;
  return !id.anonymous() && id.acting_for_by.empty() &&
         std::find(options_.proxy_users.begin(), options_.proxy_users.end(), id.user) != options_.proxy_users.end();
}

std::expected<Identity, RequestGuard::Refusal> RequestGuard::Admit(const net::HttpRequest& req, Access access) const {
  if (access == Access::kPublic) return Identity{};
  auto id = FromCredentials(req);
  if (!id) return id;
  if (const std::string* behalf = req.Header(kOnBehalfHeader)) {
    Identity end;
    if (!ParseOnBehalf(*behalf, &end)) {
      return std::unexpected(Refusal{
          400, Status(Code::kInvalidArgument, std::string(kOnBehalfHeader) + " must be USER or USER;groups=A,B"),
          "bad_on_behalf"});
    }
    const bool itself = !id->anonymous() && end.user == id->user;
    if (!itself && !MayActForOthers(*id)) {
      return std::unexpected(
          Refusal{403,
                  Status(Code::kPermissionDenied, id->ToString() + " may not act on behalf of other users (" +
                                                      std::string(kOnBehalfHeader) +
                                                      "): list it in security.proxy_users of the workers' config"),
                  "not_proxy"});
    }
    // Naming itself changes nothing: its groups stay the ones its credential proves.
    if (!itself) {
      end.proof = id->proof;
      end.acting_for_by = id->user;
      *id = std::move(end);
    }
  }
  if (!id->anonymous()) return id;
  if (!options_.cluster_secret.empty() && (access != Access::kMetrics || options_.required)) {
    return std::unexpected(SecretRefusal("no_credential"));
  }
  if (options_.required) {
    return std::unexpected(Unauthenticated(
        "this worker requires authentication (security.required): send a token (SHOAL_TOKEN, client.token_file; "
        "`shoal token issue`) or a client certificate (client.tls.cert_file)",
        "no_credential"));
  }
  return id;
}

}  // namespace shoal::security
